// Two devices of one backend driven from two threads at once (two virtual devices sharing
// cuda:0, or two CPU workers), each against a CPU reference fed the same batches one thread at
// a time. On a GPU this is what adaptive SGD on `cuda:0,cuda:0` does: any device-wide
// synchronisation or shared scratch between the two replicas shows up as a wrong result or a
// hang here.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <thread>
#include <vector>

#include "tests/backend/parity_fixture.h"

namespace hetsgd::test {
namespace {

constexpr std::uint64_t kSeed = 2222;
constexpr int kSteps = 12;

// What one thread records: the loss of every step and the top-k of every other step.
struct Trace {
  std::vector<float> losses;
  std::vector<col_t> ids;
  std::vector<float> params;
};

// Batch sizes differ between the two streams and grow, so the two devices reallocate their
// scratch at different moments while the other one computes.
CsrBatch batch_of(const ModelConfig& c, int stream, int step) {
  const index_t rows = stream == 0 ? 16 + 4 * step : 40 + 8 * step;
  return small_batch(c, rows, kSeed + 1000 * stream + step);
}

Trace run(Device& d, const ModelConfig& c, int stream, std::atomic<int>* ready) {
  Trace t;
  if (ready != nullptr) {
    ready->fetch_add(1);
    while (ready->load() < 2) std::this_thread::yield();
  }
  for (int s = 0; s < kSteps; ++s) {
    const CsrBatch b = batch_of(c, stream, s);
    t.losses.push_back(d.train_step(b, 0.3f));
    if (s % 2 == 1) {
      std::vector<col_t> ids(static_cast<size_t>(b.rows() * 3));
      std::vector<float> scores(ids.size());
      d.predict_topk(b, 3, ids.data(), scores.data());
      t.ids.insert(t.ids.end(), ids.begin(), ids.end());
    }
  }
  t.params.resize(static_cast<size_t>(d.layout().total()));
  d.read_params(t.params.data());
  return t;
}

class TwoThreads : public DeviceParity {};

TEST_P(TwoThreads, TwoDevicesFromTwoThreadsMatchSerialReference) {
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const ModelConfig c = small_config(Loss::kSoftmax, OptimizerKind::kSgd, kSeed);
  Trace want[2];
  for (int i = 0; i < 2; ++i) {
    auto ref = reference(c);
    want[i] = run(*ref, c, i, nullptr);
  }
  auto a = dut(c);
  auto b = dut(c);
  Trace got[2];
  std::atomic<int> ready{0};
  std::exception_ptr errors[2];
  std::thread ta([&] {
    try {
      got[0] = run(*a, c, 0, &ready);
    } catch (...) {
      errors[0] = std::current_exception();
    }
  });
  std::thread tb([&] {
    try {
      got[1] = run(*b, c, 1, &ready);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  ta.join();
  tb.join();
  for (int i = 0; i < 2; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    SCOPED_TRACE("thread " + std::to_string(i));
    ASSERT_EQ(got[i].losses.size(), want[i].losses.size());
    for (size_t s = 0; s < want[i].losses.size(); ++s) {
      EXPECT_NEAR(got[i].losses[s], want[i].losses[s], 1e-4 * std::fabs(want[i].losses[s]))
          << "step " << s;
    }
    EXPECT_EQ(got[i].ids, want[i].ids);
    expect_all_near(got[i].params, want[i].params, kSgdParamTol, "parameters");
  }
}

HETSGD_INSTANTIATE_ALL_DEVICES(TwoThreads);

}  // namespace
}  // namespace hetsgd::test
