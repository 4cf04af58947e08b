#include "core/engine/compare.h"

#include "core/error.h"

namespace hetsgd {
const CompareRun* find_run(const CompareResult& r, Algo algo) {
  for (const CompareRun& run : r.runs) {
    if (run.algo == algo && run.error.empty()) return &run;
  }
  return nullptr;
}

CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const Dataset& train_set, const Dataset& test_set,
                      const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval) {
  return compare(make_devices, make_comm, TrainData{&train_set, &test_set, nullptr}, options,
                 on_eval);
}

CompareResult compare(const DeviceFactory& make_devices, const CommunicatorFactory& make_comm,
                      const TrainData& data, const CompareOptions& options,
                      const std::function<void(Algo, const EvalRecord&)>& on_eval) {
  HETSGD_CHECK(make_devices != nullptr, "compare: no device factory");
  HETSGD_CHECK(!options.algos.empty(), "compare: no algorithm to run");
  CompareResult out;
  out.target_p1 = options.base.target_p1;
  for (Algo algo : options.algos) {
    if (options.stop != nullptr && options.stop->load()) break;
    CompareRun run;
    run.algo = algo;
    TrainOptions o = options.base;
    o.algo = algo;
    if (options.race_to_budget) o.stop_at_target = false;
    try {
      std::vector<std::unique_ptr<Device>> devices = make_devices();
      std::vector<Device*> raw;
      for (auto& d : devices) raw.push_back(d.get());
      std::unique_ptr<Communicator> comm = make_comm ? make_comm(raw) : make_host_communicator();
      TrainCallbacks cb;
      cb.stop = options.stop;
      cb.indexed_topk = options.indexed_topk;
      if (on_eval) cb.on_eval = [&](const EvalRecord& r) { on_eval(algo, r); };
      run.result = train(raw, *comm, data, o, TrainState{}, cb);
    } catch (const std::exception& e) {
      if (!options.keep_going) throw;
      run.error = e.what();
    }
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace hetsgd
