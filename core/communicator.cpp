#include "core/communicator.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/row_exchange.h"

namespace hetsgd {
namespace {

constexpr index_t kGrain = 1 << 14;

// acc = sum_i weights[i] * x_i over `n` floats, x_i read by `read(device, stage)`, folded into
// a double accumulator one replica at a time: a weighted sum of identical replicas with
// weights summing to 1 reproduces them exactly, and memory stays at one float and one double
// buffer whatever the device count. The dense and the row-sparse reductions share it, so a
// parameter's sum does not depend on which of them moved it.
template <class Read>
void weighted_sum(const std::vector<Device*>& devices, const std::vector<double>& weights,
                  index_t n, const Read& read, std::vector<float>* stage,
                  std::vector<double>* acc) {
  stage->resize(static_cast<std::size_t>(n));
  acc->assign(static_cast<std::size_t>(n), 0.0);
  float* st = stage->data();
  double* a = acc->data();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const double w = weights[i];
    if (w == 0.0) continue;
    read(devices[i], st);
    tbb::parallel_for(tbb::blocked_range<index_t>(0, n, kGrain),
                      [&](const tbb::blocked_range<index_t>& r) {
                        for (index_t k = r.begin(); k < r.end(); ++k) {
                          a[k] += w * static_cast<double>(st[k]);
                        }
                      });
  }
}

void to_float(const std::vector<double>& acc, float* out) {
  const double* a = acc.data();
  tbb::parallel_for(tbb::blocked_range<index_t>(0, static_cast<index_t>(acc.size()), kGrain),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t k = r.begin(); k < r.end(); ++k) {
                        out[k] = static_cast<float>(a[k]);
                      }
                    });
}

// Row exchanges are small (a batch's rows, or a merge piece), so the devices are read at the
// same time, each into its own stage, and the sum is one pass that adds them in device order
// in double and rounds once: the same arithmetic as weighted_sum() and to_float(), without
// their double buffer (at 670,091 labels that buffer's passes were most of a merge's time).
// Up to this many staged floats in all; beyond, one device at a time through weighted_sum().
// The sum goes to `out` (n floats), or to the start of `stage` when `out` is null (each float
// there is read before it is written).
constexpr index_t kParallelStageFloats = index_t{1} << 23;

template <class Read>
void weighted_sum_rows(const std::vector<Device*>& devices, const std::vector<double>& weights,
                       index_t n, const Read& read, std::vector<float>* stage,
                       std::vector<double>* acc, float* out) {
  const auto k = static_cast<index_t>(devices.size());
  if (k == 1 || k * n > kParallelStageFloats) {
    weighted_sum(devices, weights, n, read, stage, acc);
    to_float(*acc, out != nullptr ? out : stage->data());
    return;
  }
  stage->resize(static_cast<std::size_t>(k * n));
  const float* st = stage->data();
  if (out == nullptr) out = stage->data();
  tbb::parallel_for(index_t{0}, k, [&](index_t i) {
    if (weights[static_cast<std::size_t>(i)] != 0.0) read(devices[i], stage->data() + i * n);
  });
  tbb::parallel_for(tbb::blocked_range<index_t>(0, n, kGrain),
                    [&](const tbb::blocked_range<index_t>& r) {
                      for (index_t j = r.begin(); j < r.end(); ++j) {
                        double a = 0.0;
                        for (index_t i = 0; i < k; ++i) {
                          const double w = weights[static_cast<std::size_t>(i)];
                          if (w != 0.0) a += w * static_cast<double>(st[i * n + j]);
                        }
                        out[j] = static_cast<float>(a);
                      }
                    });
}

// Calls fn(device) for every device at the same time (each device on one thread).
template <class Fn>
void on_every_device(const std::vector<Device*>& devices, const Fn& fn) {
  tbb::parallel_for(std::size_t{0}, devices.size(), [&](std::size_t i) { fn(devices[i]); });
}

index_t check_devices(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      const char* what) {
  HETSGD_CHECK(!devices.empty(), what << ": no devices");
  HETSGD_CHECK(weights.size() == devices.size(),
               what << ": " << weights.size() << " weights for " << devices.size() << " devices");
  const index_t n = devices[0]->layout().total();
  for (Device* d : devices) {
    HETSGD_CHECK(d->layout().total() == n, what << ": device " << d->name() << " holds "
                                                << d->layout().total()
                                                << " parameters, the first holds " << n);
  }
  return n;
}

// The row exchange of `d`; row calls are made only for sets whose every device listed its rows.
RowExchange& rows_of(Device* d, const char* what) {
  RowExchange* rx = d->row_exchange();
  HETSGD_CHECK(rx != nullptr, what << ": " << d->name() << " cannot exchange rows");
  return *rx;
}

}  // namespace

void Communicator::average_rows(const std::vector<Device*>& devices,
                                const std::vector<double>& weights, const ParamRows& rows,
                                float* average) {
  check_devices(devices, weights, "average_rows");
  const index_t m = packed_size(devices[0]->layout(), rows);
  if (devices.size() == 1 && weights[0] == 1.0) {
    rows_of(devices[0], "average_rows").read_rows(rows, average);
    return;
  }
  for (Device* d : devices) rows_of(d, "average_rows");
  weighted_sum_rows(
      devices, weights, m, [&](Device* d, float* dst) { d->row_exchange()->read_rows(rows, dst); },
      &rows_stage_, &rows_acc_, average);
}

void Communicator::broadcast_rows(const std::vector<Device*>& devices, const ParamRows& rows,
                                  const float* params) {
  for (Device* d : devices) rows_of(d, "broadcast_rows");
  on_every_device(devices, [&](Device* d) { d->row_exchange()->write_rows(rows, params); });
}

namespace {

// The rows where `d`'s gradient may be non-zero: all() for a device without a row exchange.
ParamRows gradient_rows_of(Device* d) {
  RowExchange* rx = d->row_exchange();
  return rx != nullptr ? rx->gradient_rows() : ParamRows::all();
}

// Every replica is staged through one host buffer and folded into a double accumulator
// (weighted_sum above).
class HostCommunicator final : public Communicator {
 public:
  void average_params(const std::vector<Device*>& devices, const std::vector<double>& weights,
                      float* average) override {
    const index_t n = check_devices(devices, weights, "average_params");
    if (devices.size() == 1 && weights[0] == 1.0) {
      devices[0]->read_params(average);
      return;
    }
    weighted_sum(
        devices, weights, n, [](Device* d, float* dst) { d->read_params(dst); }, &stage_, &acc_);
    to_float(acc_, average);
  }

  void broadcast_params(const std::vector<Device*>& devices, const float* params) override {
    for (Device* d : devices) d->write_params(params);
  }

  void allreduce_gradients(const std::vector<Device*>& devices,
                           const std::vector<double>& weights) override {
    const index_t n = check_devices(devices, weights, "allreduce_gradients");
    // One device with weight 1 already holds the result: skipping the copy keeps its
    // row-sparse bookkeeping (apply_update then touches only the batch's rows).
    if (devices.size() == 1 && weights[0] == 1.0) return;
    // Every gradient is zero outside its device's gradient_rows(), so the sum is zero outside
    // their union: moving the union gives the dense all-reduce's sums, and apply_update()
    // then updates only those rows instead of scanning the whole buffer for non-zeros.
    ParamRows rows = gradient_rows_of(devices[0]);
    for (std::size_t i = 1; i < devices.size() && !rows.everything; ++i) {
      rows = unite(rows, gradient_rows_of(devices[i]));
    }
    if (!rows.everything) {
      const index_t m = packed_size(devices[0]->layout(), rows);
      weighted_sum_rows(
          devices, weights, m,
          [&](Device* d, float* dst) { d->row_exchange()->read_gradient_rows(rows, dst); }, &stage_,
          &acc_, nullptr);  // the sum in stage_'s first m floats
      on_every_device(
          devices, [&](Device* d) { d->row_exchange()->write_gradient_rows(rows, stage_.data()); });
      return;
    }
    weighted_sum(
        devices, weights, n, [](Device* d, float* dst) { d->read_gradient(dst); }, &stage_, &acc_);
    to_float(acc_, stage_.data());
    for (Device* d : devices) d->write_gradient(stage_.data());
  }

  const char* name() const override { return "host"; }

 private:
  std::vector<float> stage_;
  std::vector<double> acc_;
};

}  // namespace

std::unique_ptr<Communicator> make_host_communicator() {
  return std::make_unique<HostCommunicator>();
}

}  // namespace hetsgd
