/// \file core/forwarding_device.h
/// ForwardingDevice: the base of every Device decorator (emulation, fault injection, test
/// hooks). It owns the wrapped device and forwards every accessor, operation and capability
/// to it, so a decorator overrides only what it changes and can never drop a capability by
/// omission: an emulated or fault-injected CPU replica still merges row-sparse and in place.
#pragma once

#include <memory>
#include <string>

#include "core/device.h"
#include "core/row_exchange.h"

namespace hetsgd {

class ForwardingDevice : public Device {
 public:
  /// Takes ownership of `inner` (not null).
  explicit ForwardingDevice(std::unique_ptr<Device> inner);

  DeviceId id() const override { return inner_->id(); }
  std::string name() const override { return inner_->name(); }
  const ModelConfig& config() const override { return inner_->config(); }
  const ParamLayout& layout() const override { return inner_->layout(); }
  float train_step(const CsrBatch& batch, float lr) override {
    return inner_->train_step(batch, lr);
  }
  float gradient(const CsrBatch& batch, float scale) override {
    return inner_->gradient(batch, scale);
  }
  void apply_update(float lr) override { inner_->apply_update(lr); }
  float predict_topk(const CsrBatch& batch, int k, col_t* labels, float* scores) override {
    return inner_->predict_topk(batch, k, labels, scores);
  }
  float score_all(const CsrBatch& batch, float* scores) override {
    return inner_->score_all(batch, scores);
  }
  void read(Buffer which, float* dst) override { inner_->read(which, dst); }
  void write(Buffer which, const float* src) override { inner_->write(which, src); }
  void reset_optimizer() override { inner_->reset_optimizer(); }
  void release_training_state() override { inner_->release_training_state(); }
  OptimizerStream stream_optimizer() override { return inner_->stream_optimizer(); }
  void write_optimizer(const OptimizerState& state) override { inner_->write_optimizer(state); }
  void synchronize() override { inner_->synchronize(); }
  RowExchange* row_exchange() override { return inner_->row_exchange(); }
  Device& backend() override { return inner_->backend(); }

 protected:
  /// The wrapped device.
  Device& inner() const { return *inner_; }

 private:
  std::unique_ptr<Device> inner_;
};

}  // namespace hetsgd
