#include "core/faulty_device.h"

#include <sstream>

#include "core/error.h"
#include "core/forwarding_device.h"
#include "core/random.h"

namespace hetsgd {
namespace {

class FaultyDevice final : public ForwardingDevice {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, FaultSpec spec)
      : ForwardingDevice(std::move(inner)), spec_(std::move(spec)) {}

  std::string name() const override { return inner().name() + " (fault-injected)"; }
  float train_step(const CsrBatch& b, float lr) override {
    step();
    return inner().train_step(b, lr);
  }
  float gradient(const CsrBatch& b, float scale) override {
    step();
    return inner().gradient(b, scale);
  }
  void apply_update(float lr) override {
    alive();
    inner().apply_update(lr);
  }
  float predict_topk(const CsrBatch& b, int k, col_t* labels, float* scores) override {
    alive();
    return inner().predict_topk(b, k, labels, scores);
  }
  float score_all(const CsrBatch& b, float* scores) override {
    alive();
    return inner().score_all(b, scores);
  }
  void read(Buffer which, float* dst) override {
    alive();
    inner().read(which, dst);
  }
  void write(Buffer which, const float* src) override {
    alive();
    inner().write(which, src);
  }
  void reset_optimizer() override {
    alive();
    inner().reset_optimizer();
  }
  OptimizerStream stream_optimizer() override {
    alive();
    return inner().stream_optimizer();
  }
  void write_optimizer(const OptimizerState& state) override {
    alive();
    inner().write_optimizer(state);
  }
  void synchronize() override {
    alive();
    inner().synchronize();
  }
  // The same row exchange as the wrapped device (a fault-injected replica merges as sparsely
  // as a healthy one), with every transfer checked.
  RowExchange* row_exchange() override {
    RowExchange* rx = inner().row_exchange();
    if (rx == nullptr) return nullptr;
    if (rows_ == nullptr || rows_inner_ != rx) {
      rows_ = std::make_unique<Checked>(*rx, Alive{this});
      rows_inner_ = rx;
    }
    return rows_.get();
  }

 private:
  void step() {
    alive();
    const index_t k = steps_++;
    bool fire = spec_.fail_after_steps >= 0 && k >= spec_.fail_after_steps;
    if (spec_.fail_probability > 0.0 &&
        uniform01(spec_.seed, static_cast<std::uint64_t>(k)) < spec_.fail_probability) {
      fire = true;
    }
    if (fire) {
      dead_ = true;
      std::ostringstream os;
      os << inner().id().str() << ": " << spec_.message << " at step " << k;
      what_ = os.str();
      throw DeviceUnavailable(what_);
    }
  }
  void alive() const {
    if (dead_) throw DeviceUnavailable(what_ + " (device already failed)");
  }

  struct Alive {
    const FaultyDevice* device;
    void operator()() const { device->alive(); }
  };
  using Checked = CheckedRowExchange<Alive>;

  FaultSpec spec_;
  std::unique_ptr<Checked> rows_;
  RowExchange* rows_inner_ = nullptr;
  index_t steps_ = 0;
  bool dead_ = false;
  std::string what_;
};

}  // namespace

FaultSpec parse_fault_spec(const std::string& text) {
  FaultSpec spec;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    HETSGD_CHECK(eq != std::string::npos,
                 "fault spec '" << text << "': item '" << item << "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    try {
      size_t used = 0;
      if (key == "after") {
        spec.fail_after_steps = std::stoll(value, &used);
      } else if (key == "p") {
        spec.fail_probability = std::stod(value, &used);
      } else if (key == "seed") {
        spec.seed = std::stoull(value, &used);
      } else if (key == "msg") {
        spec.message = value;
        used = value.size();
      } else {
        throw InvalidArgument("fault spec '" + text + "': unknown key '" + key +
                              "' (expected after, p, seed or msg)");
      }
      HETSGD_CHECK(used == value.size(),
                   "fault spec '" << text << "': '" << value << "' is not a number");
    } catch (const std::logic_error&) {
      throw InvalidArgument("fault spec '" + text + "': '" + value + "' is not a number");
    }
  }
  HETSGD_CHECK(spec.fail_probability >= 0.0 && spec.fail_probability <= 1.0,
               "fault spec '" << text << "': p " << spec.fail_probability << " outside [0, 1]");
  return spec;
}

std::unique_ptr<Device> make_faulty_device(std::unique_ptr<Device> inner, FaultSpec spec) {
  HETSGD_CHECK(inner != nullptr, "make_faulty_device: no device to wrap");
  return std::make_unique<FaultyDevice>(std::move(inner), std::move(spec));
}

}  // namespace hetsgd
