#include "apps/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/faulty_device.h"
#include "datasets/data_source.h"
#include "kernels/registry.h"

namespace hetsgd::app {

void add_data_options(CLI::App* cmd, DataArgs* a, const std::string& default_preset) {
  a->synthetic = default_preset;
  cmd->add_option("--train", a->train_path,
                  "training data: XC text, LIBSVM multi-label or binary cache (format detected)");
  cmd->add_option("--test", a->test_path, "test data (same formats); metrics are computed on it");
  cmd->add_option("--synthetic", a->synthetic,
                  "embedded synthetic data when no --train: bibtex, delicious, eurlex-4k, "
                  "amazon-670k")
      ->capture_default_str();
  cmd->add_option("--scale", a->scale, "fraction of the synthetic preset's rows (0, 1]")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--data-seed", a->data_seed, "seed of the synthetic generator")
      ->capture_default_str();
}

void add_model_options(CLI::App* cmd, ModelArgs* a) {
  cmd->add_option("--hidden", a->hidden, "hidden layer widths, comma-separated")
      ->capture_default_str();
  cmd->add_option("--loss", a->loss, "softmax (CE on normalised targets) or bce (one-vs-all)")
      ->capture_default_str()
      ->check(CLI::IsMember({"softmax", "bce"}));
  cmd->add_option("--optimizer", a->optimizer, "sgd or adam")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam"}));
  cmd->add_option("--momentum", a->momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", a->weight_decay, "L2 weight decay")->capture_default_str();
  cmd->add_option("--seed", a->seed, "model initialisation seed")->capture_default_str();
}

void add_device_options(CLI::App* cmd, DeviceArgs* a, const std::string& default_devices) {
  a->devices = default_devices;
  cmd->add_option("--devices", a->devices,
                  "devices: auto (every GPU, else cpu:0,cpu:1@0.33), or a list of cpu, cpu:N, "
                  "cuda:N; @F emulates a device at F of its speed")
      ->capture_default_str();
  cmd->add_option("--threads", a->threads,
                  "threads per CPU device (0 = hardware threads / CPU devices)")
      ->capture_default_str();
  cmd->add_flag("--tf32", a->tf32, "allow TF32 tensor-core GEMMs on CUDA devices");
  cmd->add_option("--inject-fault", a->inject_fault,
                  "make device I fail: I:after=N (after N steps) or I:p=F (each step with "
                  "probability F); training continues on the others");
}

void parse_train_enums(const TrainEnumArgs& e, TrainOptions* o) {
  o->algo = parse_algo(e.algo);
  o->batch_policy = parse_batch_policy(e.batch_policy);
  o->merge_weights = parse_merge_weights(e.merge_weights);
  o->lr_scaling = parse_lr_scaling(e.lr_scaling);
  o->lr_batch = parse_lr_batch(e.lr_batch);
  o->validate();
}

void add_train_options(CLI::App* cmd, TrainOptions* o, TrainEnumArgs* e) {
  e->algo = to_string(o->algo);
  e->batch_policy = to_string(o->batch_policy);
  e->merge_weights = to_string(o->merge_weights);
  e->lr_scaling = to_string(o->lr_scaling);
  e->lr_batch = to_string(o->lr_batch);
  std::string* algo = &e->algo;
  std::string* policy = &e->batch_policy;
  std::string* weights = &e->merge_weights;
  std::string* scaling = &e->lr_scaling;
  const std::string g = "Training";
  cmd->add_option("--algo", *algo, "adaptive, sync, avg (static averaging) or easgd")
      ->capture_default_str()
      ->group(g)
      ->check(CLI::IsMember({"adaptive", "sync", "avg", "easgd"}));
  cmd->add_option("--lr", o->lr0, "base learning rate at batch size b0")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--lr-scaling", *scaling, "lr vs batch size: auto, linear, sqrt, none")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--lr-batch", e->lr_batch,
                  "adaptive/avg: scale lr by the round's global batch (round) or by each "
                  "device's own batch (device, the paper)")
      ->capture_default_str()
      ->group(g)
      ->check(CLI::IsMember({"round", "device"}));
  cmd->add_option("--lambda", o->lambda, "lr decay 1/(1+lambda*(epoch-warmup))")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--warmup-epochs", o->warmup_epochs, "epochs of linear lr warm-up")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--warmup-batch", o->warmup_batch, "batch size during warm-up (0 = b0)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--warmup-start", o->warmup_start, "warm-up starts at this fraction of lr")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--batch,--b0", o->b0, "base batch size per device (sync: K*b0 global)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--round-samples", o->round_samples, "points per round / mega-batch S (0 = auto)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--batch-policy", *policy, "paper, proportional or fixed")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--b-min", o->b_min, "smallest per-device batch")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--b-max", o->b_max, "largest per-device batch")->capture_default_str()->group(g);
  cmd->add_option("--batch-step", o->batch_step, "`paper` policy step")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--throughput-ema", o->throughput_ema,
                  "`proportional`: weight of the newest round in each device's throughput")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--merge-weights", *weights, "updates, samples or uniform")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--alpha", o->alpha, "elastic rate of the centre")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--beta", o->beta, "pull of replicas towards the centre (1 = restart)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--mu", o->mu, "block momentum of the centre")->capture_default_str()->group(g);
  cmd->add_option("--easgd-tau", o->easgd_tau, "EASGD local steps between elastic updates")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--easgd-rate", o->easgd_rate, "EASGD moving rate (0 = 0.9/K)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--eval-every", o->eval_every_rounds, "evaluate every R rounds (0 = auto)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--eval-batch", o->eval_batch, "rows per prediction call in evaluation")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--eval-topk", o->eval_topk, "k predicted per row in evaluation (>= 5)")
      ->capture_default_str()
      ->group(g);
  cmd->add_flag("--eval-at-start,!--no-eval-at-start", o->eval_at_start,
                "record the initial model at time 0")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--eval-max-points", o->eval_max_points,
                  "evaluate on the first N test points (0 = all)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--time-budget", o->time_budget_s, "training seconds (0 = none)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--epochs", o->max_epochs, "epochs (0 = none)")->capture_default_str()->group(g);
  cmd->add_option("--max-rounds", o->max_rounds, "rounds (0 = none)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--target-p1", o->target_p1,
                  "target test P@1 (0 = none): its time is reported; train stops there unless "
                  "--no-stop-at-target (compare always races to the budget)")
      ->capture_default_str()
      ->group(g);
  cmd->add_flag("--stop-at-target,!--no-stop-at-target", o->stop_at_target,
                "stop training when --target-p1 is reached")
      ->group(g);
  cmd->add_option("--shuffle-seed", o->seed, "seed of the data order")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--checkpoint", o->checkpoint_path, "write checkpoints here")->group(g);
  cmd->add_option("--checkpoint-every", o->checkpoint_every_rounds,
                  "checkpoint every N rounds (0 = at the end only)")
      ->capture_default_str()
      ->group(g);
  cmd->add_option("--resume", o->resume_path, "continue from this checkpoint")->group(g);
}

LoadedData load_data(const DataArgs& a) {
  datasets::DataRequest request;
  request.train_path = a.train_path;
  request.test_path = a.test_path;
  request.synthetic = a.synthetic;
  request.scale = a.scale;
  request.data_seed = a.data_seed;
  return datasets::load_data_pair(request);
}

ModelConfig make_model_config(const ModelArgs& a, const Dataset& data) {
  ModelConfig c;
  c.num_features = data.num_features;
  c.num_labels = data.num_labels;
  c.hidden.clear();
  std::stringstream ss(a.hidden);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    HETSGD_CHECK(used == item.size() && used > 0 && v >= 1 && v <= (1 << 20),
                 "--hidden: '" << item << "' is not a width in [1, 1048576]");
    c.hidden.push_back(v);
  }
  c.loss = parse_loss(a.loss);
  c.optimizer.kind = parse_optimizer(a.optimizer);
  c.optimizer.momentum = a.momentum;
  c.optimizer.weight_decay = a.weight_decay;
  c.seed = a.seed;
  c.validate();
  return c;
}

std::pair<std::vector<DeviceId>, hetsgd::DeviceOptions> resolve_device_args(const DeviceArgs& a) {
  std::vector<DeviceId> ids = resolve_devices(a.devices);
  hetsgd::DeviceOptions opts;
  opts.tf32 = a.tf32;
  HETSGD_CHECK(a.threads >= 0, "--threads " << a.threads << " < 0");
  int cpu_devices = 0;
  for (const DeviceId& id : ids) cpu_devices += id.kind == DeviceKind::kCpu ? 1 : 0;
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  opts.threads = a.threads > 0 ? a.threads : std::max(1, hw / std::max(1, cpu_devices));
  return {ids, opts};
}

std::vector<std::unique_ptr<Device>> make_devices(const std::vector<DeviceId>& ids,
                                                  const ModelConfig& config,
                                                  const hetsgd::DeviceOptions& options,
                                                  const std::string& inject_fault) {
  std::vector<std::unique_ptr<Device>> devs;
  for (const DeviceId& id : ids) devs.push_back(make_device(id, config, options));
  if (!inject_fault.empty()) {
    const auto colon = inject_fault.find(':');
    const std::string index = inject_fault.substr(0, colon);
    HETSGD_CHECK(colon != std::string::npos && !index.empty() &&
                     index.find_first_not_of("0123456789") == std::string::npos &&
                     index.size() < 6 && std::stoul(index) < devs.size(),
                 "--inject-fault '" << inject_fault
                                    << "': expected I:SPEC with device index I in [0, "
                                    << devs.size() << ")");
    const std::size_t i = std::stoul(index);
    devs[i] =
        make_faulty_device(std::move(devs[i]), parse_fault_spec(inject_fault.substr(colon + 1)));
  }
  return devs;
}

bool any_emulated(const std::vector<DeviceId>& ids) {
  for (const DeviceId& id : ids) {
    if (id.emulated()) return true;
  }
  return false;
}

std::string join_ids(const std::vector<DeviceId>& ids) {
  std::string s;
  for (const DeviceId& id : ids) s += (s.empty() ? "" : ",") + id.str();
  return s;
}

std::string find_tool(const std::string& name) {
  const char* env = std::getenv("HETSGD_TOOLS_DIR");
  const std::string p =
      (env != nullptr ? std::string(env) : std::string(HETSGD_SOURCE_DIR) + "/tools") + "/" + name;
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? p : "";
}

Progress::Progress(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { done(); }

void Progress::line(const std::string& text) {
  if (quiet_) return;
  if (tty_) {
    std::cerr << "\r\033[K" << text << std::flush;
    open_ = true;
  } else {
    std::cerr << text << '\n';
  }
}

void Progress::done() {
  if (open_) std::cerr << '\n';
  open_ = false;
}

}  // namespace hetsgd::app
