#include "apps/report.h"

#include "core/engine/summary_json.h"

namespace hetsgd::app {

nlohmann::json metrics_to_json(const RankingMetrics& m) {
  nlohmann::json j;
  for (int k : {1, 3, 5}) {
    j["p" + std::to_string(k)] = m.p_at(k);
    j["ndcg" + std::to_string(k)] = m.ndcg_at(k);
    j["recall" + std::to_string(k)] = m.recall_at(k);
    if (m.has_propensity) {
      j["psp" + std::to_string(k)] = m.psp_at(k);
      j["psndcg" + std::to_string(k)] = m.psndcg_at(k);
    }
  }
  j["test_loss"] = m.loss;
  return j;
}

nlohmann::json eval_to_json(const EvalRecord& e, const EvalSampleRows* rows) {
  nlohmann::json j = metrics_to_json(e.metrics);
  j["time_s"] = e.time_s;
  j["eval_s"] = e.eval_s;
  j["epoch"] = e.epoch;
  j["round"] = e.round;
  j["samples"] = e.samples;
  j["train_loss"] = e.train_loss;
  j["device_updates"] = e.device_updates;
  j["device_batch"] = e.device_batch;
  j["devices_alive"] = e.devices_alive;
  if (e.has_val) {
    j["val"] = metrics_to_json(e.val_metrics);
    j["best"] = e.best;
  }
  if (rows != nullptr) {
    j["record"] = "in_training";
    j["test_rows"] = rows->test;
    if (e.has_val) j["val_rows"] = rows->val;
    j["sampled"] = rows->test_sampled() || (e.has_val && rows->val_sampled());
  }
  return j;
}

nlohmann::json result_to_json(const TrainResult& r, index_t test_rows) {
  nlohmann::json j = metrics_to_json(r.final_metrics);
  j["algo"] = to_string(r.algo);
  j["train_time_s"] = r.train_seconds;
  j["eval_time_s"] = r.eval_seconds;
  j["merge_time_s"] = r.merge_seconds;
  j["checkpoint_chunks"] = r.checkpoint_chunks;
  j["samples"] = r.samples;
  j["epochs"] = r.epochs;
  j["rounds"] = r.rounds_done;
  j["round_samples"] = r.round_samples;
  j["samples_per_s"] = r.samples_per_second();
  j["time_to_target_s"] = r.time_to_target_s;
  j["test_max_p1"] = r.best_p1;  // an oracle over the test curve: reference only
  j["selected_round"] = r.selected_round;
  j["final_eval_rows"] = r.final_eval_rows;    // test rows behind the reported metrics
  j["eval_sample_rows"] = r.eval_sample_rows;  // test rows of each in-training evaluation
  // How the final metrics were ranked: exactly, or through label clusters with their recall
  // against the exact top-k (and the exact metrics) on index_recall.rows drawn rows at the
  // search level used (index_recall is also there when no level reached kMinIndexRecall).
  j["final_eval"] = r.final_indexed                                    ? "index"
                    : (test_rows > 0 && r.final_eval_rows < test_rows) ? "exact_drawn_rows"
                                                                       : "exact";
  if (r.index_recall.rows > 0) {
    j["index_recall"] = {{"rows", r.index_recall.rows},
                         {"at1", r.index_recall.at_k(1)},
                         {"at3", r.index_recall.at_k(3)},
                         {"at5", r.index_recall.at_k(5)},
                         {"level", r.index_level}};
  }
  if (r.final_indexed) j["exact_sample"] = metrics_to_json(r.exact_sample);
  if (r.has_val) j["val"] = metrics_to_json(r.val_metrics);
  j["stop"] = to_string(r.stop);
  j["resumed"] = r.resumed;
  j["ranks"] = r.ranks;
  nlohmann::json devs = nlohmann::json::array();
  for (const DeviceSummary& d : r.devices) {
    nlohmann::json dj = d;
    dj["rank"] = d.rank;
    dj["emulated"] = d.id.emulated();
    devs.push_back(std::move(dj));
  }
  j["devices"] = devs;
  return j;
}

nlohmann::json final_log_record(const nlohmann::json& summary) {
  // Copied from the summary rather than recomputed, so that the log cannot disagree with what
  // --json and the table report.
  nlohmann::json j;
  j["record"] = "final";
  for (const char* metric : {"p", "ndcg", "recall", "psp", "psndcg"}) {
    for (int k : {1, 3, 5}) {
      const std::string key = metric + std::to_string(k);
      if (summary.contains(key)) j[key] = summary[key];
    }
  }
  for (const char* key :
       {"test_loss", "final_eval", "final_eval_rows", "val", "selected_round", "epochs", "rounds",
        "samples", "train_time_s", "stop", "forest_weight", "tail_weight", "refit", "model"}) {
    if (summary.contains(key)) j[key] = summary[key];
  }
  return j;
}

}  // namespace hetsgd::app
