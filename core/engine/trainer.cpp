// train(): the entry points; the run loop they start is core/engine/run_loop.h.
#include "core/engine/trainer.h"

#include "core/engine/run_loop.h"
#include "core/error.h"

namespace hetsgd {

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const TrainData& data,
                  const TrainOptions& options, TrainState initial,
                  const TrainCallbacks& callbacks) {
  HETSGD_CHECK(data.train != nullptr && data.test != nullptr, "train: no training or test set");
  RunLoop loop(devices, comm, data, options, callbacks);
  return loop.run(std::move(initial));
}

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options, TrainState initial,
                  const TrainCallbacks& callbacks) {
  return train(devices, comm, TrainData{&train_set, &test_set, nullptr}, options,
               std::move(initial), callbacks);
}

TrainResult train(const std::vector<Device*>& devices, Communicator& comm, const Dataset& train_set,
                  const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  return train(devices, comm, train_set, test_set, options, TrainState{}, callbacks);
}

TrainResult train(std::vector<std::unique_ptr<Device>>& devices, Communicator& comm,
                  const Dataset& train_set, const Dataset& test_set, const TrainOptions& options,
                  const TrainCallbacks& callbacks) {
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  return train(raw, comm, train_set, test_set, options, callbacks);
}

}  // namespace hetsgd
