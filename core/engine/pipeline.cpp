#include "core/engine/pipeline.h"

#include <utility>

#include "core/engine/evaluation.h"
#include "core/error.h"

namespace hetsgd {

RunOutcome run_pipeline(const RunSetup& setup, const TrainData& data,
                        const TrainCallbacks& callbacks, TrainState initial) {
  setup.options.validate();
  setup.calibration.validate();
  setup.calibration.check_fits(setup.config);
  HETSGD_CHECK(setup.make_devices && setup.make_communicator,
               "run_pipeline: no backend to make the replicas");
  std::vector<std::unique_ptr<Device>> devices = setup.make_devices();
  std::vector<Device*> raw;
  for (auto& d : devices) raw.push_back(d.get());
  std::unique_ptr<Communicator> comm = setup.make_communicator(raw);
  RunOutcome out;
  out.communicator = comm->name();
  // The test set only reports. Where an evaluation scores a sample of it (in training, or a
  // final evaluation past its budget: core/engine/evaluation.h), it scores the first rows of
  // what it is given: the run hands it the rows in a seeded random order, so that the sample
  // is a random draw whatever order the file keeps (a file sorted by source or by label would
  // otherwise report its first block). Every row is still scored where all are.
  TrainData d = data;
  Dataset drawn;
  const index_t val_rows = data.val != nullptr ? data.val->rows() : 0;
  if (data.test != nullptr && in_training_test_rows(setup.options, data.test->rows(), val_rows,
                                                    setup.config) < data.test->rows()) {
    drawn = draw_rows(*data.test, kTestDrawSeed);
    d.test = &drawn;
  }
  // Calibration that may change the model scores the test set through the saved model: the
  // trainer's own exact pass over it would be thrown away.
  TrainOptions options = setup.options;
  options.defer_final_eval =
      may_change_model(setup.calibration, data.val != nullptr && data.val->rows() > 0);
  // The forest's first trees grow on what the training leaves of the cores, not after it.
  CalibrationData cal{d.train, d.val, d.test, callbacks.indexed_topk};
  const bool calibrates = data.cluster == nullptr || data.cluster->is_root();
  const std::unique_ptr<ForestHeadStart> head =
      calibrates ? start_forest_head(setup.calibration, setup.config, setup.options, cal) : nullptr;
  cal.head_start = head.get();
  out.result = train(raw, *comm, d, options, std::move(initial), callbacks);
  // Only scoring follows: the replicas' gradients and optimiser states (two to three times
  // the parameters' bytes) are given back before the forest and the classifiers grow.
  for (Device* dev : raw) dev->release_training_state();
  if (!calibrates) return out;
  // Calibration evaluates on the first device still alive (a failed one may be gone).
  size_t evaluator = 0;
  for (size_t i = 0; i < raw.size() && i < out.result.devices.size(); ++i) {
    if (out.result.devices[i].alive) {
      evaluator = i;
      break;
    }
  }
  out.calibration = calibrate(setup.calibration, setup.config, setup.options, cal, *raw[evaluator],
                              &out.result, callbacks.stop);
  out.model.config = setup.config;
  out.model.params = std::move(out.result.model);
  out.model.forest = out.calibration.forest;
  out.model.forest_weight = out.calibration.forest_weight;
  out.model.linear = out.calibration.linear;
  out.model.linear_weight = out.calibration.linear_weight;
  return out;
}

}  // namespace hetsgd
