#include "apps/job_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"

namespace hetsgd::app {
namespace {

// Options of `hetsgd train` a shared job cannot honour: refused by name rather than ignored.
const std::vector<std::pair<std::string, std::string>> kRefused = {
    {"--resume", "a tenant's job starts fresh and keeps its state in memory between rounds"},
    {"--checkpoint", "a tenant's job is not checkpointed; its state lives between rounds"},
    {"--checkpoint-every", "a tenant's job is not checkpointed"},
    {"--time-budget",
     "the share gives the job its time round by round; use epochs or "
     "max_rounds to make it finish"},
};

}  // namespace

JobArgs parse_job_options(const tenancy::TenantSpec& t, int index, const std::string& file) {
  const std::string where = file + ": /tenants/" + std::to_string(index) + "/job";
  JobArgs ja;
  ja.train.max_epochs = 0.0;
  ja.train.eval_at_start = false;
  ja.train.eval_max_points = 1000;
  ja.data.scale = 0.25;
  CLI::App app;
  add_data_options(&app, &ja.data, "");
  add_model_options(&app, &ja.model);
  add_train_options(&app, &ja.train);
  add_validation_options(&app, &ja.val);
  add_calibration_options(&app, &ja.calibration);
  app.add_option("-o,--output", ja.output);
  // The job says where its data is with "data"; the device flags belong to the allocation.
  const std::vector<std::string> not_job = {"--train", "--synthetic", "--hidden"};

  std::vector<std::string> args;
  for (const auto& [key, value] : t.job.options) {
    const auto p = t.job.option_paths.find(key);
    const std::string path = p != t.job.option_paths.end() ? file + ": " + p->second : where;
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const CLI::Option* opt = app.get_option_no_throw(flag);
    if (opt == nullptr || std::find(not_job.begin(), not_job.end(), flag) != not_job.end()) {
      throw InvalidArgument(path + ": unknown job option '" + key +
                            "' (a job takes the options of `hetsgd train`, e.g. lr, epochs, "
                            "batch, batch_policy, optimizer, test, scale; tenant " +
                            t.name + ")");
    }
    const auto refused = std::find_if(kRefused.begin(), kRefused.end(),
                                      [&](const auto& r) { return flag == r.first; });
    if (refused != kRefused.end()) {
      throw InvalidArgument(path + ": job option '" + key + "' is not supported in a share (" +
                            refused->second + "; tenant " + t.name + ")");
    }
    args.push_back(flag + "=" + value);
  }
  const std::string prefix = "synthetic:";
  if (t.job.data.rfind(prefix, 0) == 0) {
    ja.data.synthetic = t.job.data.substr(prefix.size());
  } else {
    ja.data.train_path = t.job.data;
  }
  if (!t.job.hidden.empty()) {
    ja.model.hidden.clear();
    for (int h : t.job.hidden) {
      ja.model.hidden += (ja.model.hidden.empty() ? "" : ",") + std::to_string(h);
    }
  }
  if (!t.job.algorithm.empty()) args.push_back("--algo=" + t.job.algorithm);
  // CLI11 takes a vector in reverse order.
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw InvalidArgument(where + " (tenant " + t.name + "): " + e.what());
  }
  try {
    // The share gives the job its time round by round: check the rest with a stand-in budget.
    TrainOptions check = ja.train;
    check.time_budget_s = 1.0;
    check.validate();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(where + " (tenant " + t.name + "): " + e.what());
  }
  return ja;
}

}  // namespace hetsgd::app
