// `hetsgd share`: fair shares of this server's devices between tenants' jobs (OEF and
// baselines), optionally enforced round by round on real training jobs.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "apps/cli_common.h"
#include "apps/commands.h"
#include "apps/interrupt.h"
#include "apps/job_options.h"
#include "apps/option_checks.h"
#include "apps/plot_launcher.h"
#include "apps/share_jobs.h"
#include "apps/share_tables.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/tenancy/share_report.h"
#include "core/tenancy/share_runner.h"
#include "kernels/registry.h"

namespace hetsgd::app {
namespace {

struct ShareArgs {
  std::string jobs;
  std::string policy = "oef-coop";
  bool compare = false;
  bool redistribute = false;
  bool run = false;
  int rounds = 6;
  double round_seconds = 0.0;
  int threads = 0;  // per CPU device; 0 = hardware threads / CPU devices shared
  std::string out = "share_out";
  std::string devices = "auto";
  bool json = false;
  bool quiet = false;  ///< -q: no notice on stderr (errors and format guesses still)
};

/// Threads per CPU device when --threads is 0: the hardware threads split between the CPU
/// devices the share hands out, since every tenant may hold some of them at the same time.
int share_threads(int requested, const std::vector<tenancy::DeviceTypeSpec>& types) {
  HETSGD_CHECK(requested >= 0, "--threads " << requested << " < 0");
  if (requested > 0) return requested;
  int cpus = 0;
  for (const auto& t : types) {
    for (const DeviceId& d : t.devices) cpus += d.kind == DeviceKind::kCpu ? 1 : 0;
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, hw / std::max(1, cpus));
}

/// Runs `what` for tenant `i`; an error names the jobs file and the tenant.
template <typename F>
auto for_tenant(const std::string& jobs, const tenancy::JobsFile& file, int i, F&& what) {
  try {
    return what();
  } catch (const std::exception& e) {
    throw Error(jobs + ": /tenants/" + std::to_string(i) + " (tenant '" + file.tenants[i].name +
                "'): " + e.what());
  }
}

int run_share(const ShareArgs& a) {
  const tenancy::JobsFile file = tenancy::read_jobs_file(a.jobs);
  std::error_code made;
  std::filesystem::create_directories(a.out, made);
  if (made) throw IoError(a.out + ": cannot create the output folder: " + made.message());
  // With --run, SIGINT / SIGTERM end the running job rounds at a batch boundary and start no
  // other round; what ran is reported and written, and the exit code is 130 / 143.
  std::unique_ptr<StopOnSignal> signals;
  if (a.run) signals = std::make_unique<StopOnSignal>();
  tenancy::PolicyOptions popts;
  popts.redistribute = a.redistribute;

  // Jobs are built only when they must run (profiling or --run): data can be large.
  std::vector<std::unique_ptr<TenantJob>> jobs(file.tenants.size());
  // Every job's options are checked now, before any allocation is printed: a typo in a job
  // that would only run in round 30 is refused at once.
  std::map<std::string, std::size_t> outputs;
  for (std::size_t i = 0; i < file.tenants.size(); ++i) {
    const JobArgs ja = parse_job_options(file.tenants[i], static_cast<int>(i), a.jobs);
    if (ja.output.empty()) continue;
    const std::string where = a.jobs + ": /tenants/" + std::to_string(i) + "/job/output";
    check_output_path(ja.output, where);
    const auto [other, fresh] = outputs.emplace(ja.output, i);
    if (!fresh) {
      throw InvalidArgument(where + ": '" + ja.output + "' is tenant " +
                            std::to_string(other->second) + "'s output too");
    }
  }
  // "device_types": "present" groups this machine's devices (or --devices) into types.
  const std::vector<DeviceId> present =
      file.types_from_present ? resolve_devices(a.devices) : std::vector<DeviceId>{};
  const std::vector<tenancy::DeviceTypeSpec> types = tenancy::resolve_types(file, present);
  const int threads = share_threads(a.threads, types);
  auto job_of = [&](int i) -> TenantJob& {
    if (!jobs[i]) {
      jobs[i] = make_job(file.tenants[i], i, a.jobs, a.quiet, threads);
      if (signals) jobs[i]->job->set_stop(signals->flag());
    }
    return *jobs[i];
  };
  tenancy::ProfileFn profile = nullptr;
  if (!file.has_throughput) {
    profile = [&](int tenant, const std::string& type) {
      for (const auto& t : types) {
        if (t.name == type && !t.devices.empty()) {
          return for_tenant(a.jobs, file, tenant, [&] {
            return profile_job(job_of(tenant), t.devices.front(), threads);
          });
        }
      }
      throw InvalidArgument(a.jobs + ": type " + type + " lists no device to profile on");
    };
  }
  const tenancy::SharingSetup setup = tenancy::make_setup(file, profile, present);
  const std::vector<std::string> policies =
      a.compare ? tenancy::policy_names() : std::vector<std::string>{a.policy};
  const tenancy::ShareReport report = tenancy::compare_policies(setup.instance, policies, popts);
  const std::string json_path = a.out + "/shares.json";
  tenancy::write_share_json(report, json_path);
  if (a.json && !a.run) {
    std::cout << tenancy::share_report_json(report).dump() << '\n';
  } else if (!a.json) {
    tenancy::print_share_table(report, std::cout);
  }
  if (draw_plot("plot_shares.py", {json_path, "-o", a.out + "/shares.png"}) && !a.json) {
    std::cout << "chart: " << a.out << "/shares.png\n";
  }

  if (a.run) {
    tenancy::RunOptions ro;
    ro.rounds = a.rounds;
    ro.round_seconds = a.round_seconds > 0 ? a.round_seconds : file.round_seconds;
    ro.policy_options = popts;
    ro.parallel = true;
    ro.stop = signals->flag();
    const tenancy::EnforcementResult r = tenancy::run_enforcement(
        setup, a.policy, ro, [&](int tenant, const std::vector<DeviceId>& held, double s) {
          return for_tenant(a.jobs, file, tenant, [&] {
            return held.empty() ? tenancy::TenantRound{}
                                : run_job_round(job_of(tenant), held, s, threads);
          });
        });
    const std::vector<FinishedJob> finished =
        finish_jobs(jobs, file, r, threads, a.quiet, signals->flag());
    // One JSON record holds the report and the run; the text form prints the rounds and events.
    nlohmann::json run_json = tenancy::enforcement_json(r, setup.instance, ro.round_seconds);
    run_json["models"] = finished_json(finished);
    if (a.json) {
      nlohmann::json out = tenancy::share_report_json(report);
      out["enforcement"] = run_json;
      std::cout << out.dump() << '\n';
    } else {
      print_enforcement(r, setup.instance, ro.round_seconds, std::cout);
      print_finished(finished, std::cout);
    }
    const std::string run_path = a.out + "/enforcement.json";
    write_file_atomic(run_path, run_json.dump(1) + "\n");
    if (draw_plot("plot_shares.py", {run_path, "-o", a.out + "/enforcement.png"}) && !a.json) {
      std::cout << "chart: " << a.out << "/enforcement.png\n";
    }
    // A failed job stopped alone and the others went on; the run still reports the failure.
    bool failed = r.any_failed();
    for (std::size_t i = 0; i < file.tenants.size(); ++i) {
      if (r.failed_round[i] >= 0) {
        std::cerr << "hetsgd: error: round " << r.failed_round[i] << ": " << r.failure[i] << '\n';
      }
    }
    for (const FinishedJob& f : finished) {
      if (f.error.empty()) continue;
      std::cerr << "hetsgd: error: tenant '" << f.tenant << "': its model: " << f.error << '\n';
      failed = true;
    }
    if (failed) return signals->exit_code(1);
  }
  // A full disk behind stdout (--json > file) is an error, not a silent truncation.
  check_stream_written(std::cout, "stdout");
  return signals ? signals->exit_code(0) : 0;
}

}  // namespace

Runner add_share_command(CLI::App& app) {
  auto a = std::make_shared<ShareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "share", "fair shares of the devices between tenants (OEF, gavel, nash, equal)");
  cmd->add_option("--jobs", a->jobs, "jobs file (JSON): tenants, weights, jobs, device types")
      ->required();
  cmd->add_option("--policy", a->policy,
                  "oef-coop, oef-noncoop, partial-allocation, gavel, nash or equal")
      ->capture_default_str()
      ->check(CLI::IsMember(tenancy::policy_names()));
  cmd->add_flag("--compare", a->compare, "report every policy side by side");
  cmd->add_flag("--redistribute", a->redistribute,
                "oef-noncoop, partial-allocation: hand out the withheld capacity (NOT "
                "strategy-proof)");
  cmd->add_flag("--run", a->run, "enforce --policy round by round on the real training jobs");
  cmd->add_option("--rounds", a->rounds, "rounds to run with --run")->capture_default_str();
  cmd->add_option("--round-seconds", a->round_seconds,
                  "round length in seconds (0 = the jobs file's; else within the jobs file's "
                  "bounds)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& t) -> std::string {
            // 0 keeps the jobs file's value; anything else has the jobs file's bounds.
            if (t == "0") return std::string();
            std::string why = in_range(tenancy::kMinRoundSeconds, tenancy::kMaxRoundSeconds)(t);
            return why.empty() ? why : why + " (0 = the jobs file's round_seconds)";
          },
          ""));
  cmd->add_option("--threads", a->threads,
                  "threads per CPU device (0 = hardware threads / CPU devices shared, as in "
                  "train)")
      ->capture_default_str()
      ->check(in_range(0, 4096));
  cmd->add_option("--devices", a->devices,
                  "the devices a jobs file with \"device_types\": \"present\" shares (auto = "
                  "every GPU, else cpu:0,cpu:1@0.33)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& t) { parse_device_list(t); }, "auto"));
  cmd->add_option("-o,--output", a->out, "folder for shares.json and shares.png")
      ->capture_default_str();
  cmd->add_option("--out", a->out)->group("");  // the former name, kept for scripts
  cmd->add_flag("--json", a->json, "print the report as one JSON record");
  cmd->add_flag("-q,--quiet", a->quiet,
                "no notice on stderr (each job's data format; errors and guesses still)");
  return [a] { return run_share(*a); };
}

}  // namespace hetsgd::app
