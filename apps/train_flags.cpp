#include "apps/train_flags.h"

#include <sstream>
#include <string>

#include "apps/option_checks.h"

namespace hetsgd::app {

namespace {
// A default as --help shows it: "0", not std::to_string's "0.000000".
std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

void add_train_options(CLI::App* cmd, TrainOptions* o) {
  const std::string g = "Training";
  // Bounds mirror TrainOptions::validate(), so a bad value fails at parse time with exit 2;
  // validate() still guards library callers. Counts stay far below overflow of their users.
  add_enum_option(cmd, "--algo", &o->algo, "adaptive, sync, avg (static averaging) or easgd",
                  "algorithm")
      ->group(g);
  cmd->add_option("--lr", o->lr0, "base learning rate at batch size b0")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1e-12, 1e3));
  add_enum_option(cmd, "--lr-scaling", &o->lr_scaling, "lr vs batch size: auto, linear, sqrt, none",
                  "lr scaling")
      ->group(g);
  add_enum_option(cmd, "--lr-batch", &o->lr_batch,
                  "adaptive/avg: scale lr by the round's global batch (round) or by each "
                  "device's own batch (device, the paper)",
                  "lr batch")
      ->group(g);
  cmd->add_option("--lambda", o->lambda,
                  "lr decay 1/(1+lambda*(e-warmup)), e counting epochs or, where labels are "
                  "rare, --decay-visits' longer passes, of at least --decay-min-points points")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1e6));
  cmd->add_option("--decay-visits", o->decay_visits,
                  "the decay's clock counts passes in which the mean label is seen at least this "
                  "many times (an epoch where it is seen more; 0 = epochs)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1e9));
  cmd->add_option("--decay-min-points", o->decay_min_points,
                  "... and at least this many points (0 = no floor): a set of fewer rows "
                  "decays once per this many points, not per epoch")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(index_t{0}, index_t{1} << 40));
  cmd->add_option("--warmup-epochs", o->warmup_epochs, "epochs of linear lr warm-up")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1e6));
  cmd->add_option("--warmup-batch", o->warmup_batch, "batch size during warm-up (0 = b0)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1 << 20));
  cmd->add_option("--warmup-start", o->warmup_start, "warm-up starts at this fraction of lr")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1e-9, 1.0));
  cmd->add_option("--batch,--b0", o->b0, "base batch size per device (sync: K*b0 global)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--round-samples", o->round_samples, "points per round / mega-batch S (0 = auto)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0, 1 << 30));
  cmd->add_option("--merge-budget", o->merge_budget,
                  "auto S doubles (up to N/4) after a round whose merge took more than this "
                  "share of it (0 = fixed S; adaptive and avg, not --deterministic)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 0.99));
  add_enum_option(cmd, "--batch-policy", &o->batch_policy, "paper, proportional or fixed",
                  "batch policy")
      ->group(g);
  cmd->add_option("--b-min", o->b_min, "smallest per-device batch")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--b-max", o->b_max, "largest per-device batch")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--batch-step", o->batch_step, "`paper` policy step")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--throughput-ema", o->throughput_ema,
                  "`proportional`: weight of the newest round in each device's throughput")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1e-6, 1.0));
  add_enum_option(cmd, "--merge-weights", &o->merge_weights, "updates, samples or uniform",
                  "merge weights")
      ->group(g);
  cmd->add_option("--alpha", o->alpha, "elastic rate of the centre")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1e-9, 2.0));
  cmd->add_option("--beta", o->beta, "pull of replicas towards the centre (1 = restart)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1e-9, 1.0));
  cmd->add_option("--mu", o->mu,
                  "block momentum of the centre, Z' = Z + alpha (A - Z) + mu (Z - Z_prev); 0 "
                  "by default (plain model averaging), where the paper's kernel merges with a "
                  "block momentum whose value it does not publish")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 0.999999));
  cmd->add_option("--easgd-tau", o->easgd_tau, "EASGD local steps between elastic updates")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--easgd-rate", o->easgd_rate, "EASGD moving rate (0 = 0.9/K)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1.0));
  cmd->add_option("--eval-every", o->eval_every_rounds, "evaluate every R rounds (0 = auto)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0, 1 << 30));
  cmd->add_option("--eval-batch", o->eval_batch, "rows per prediction call in evaluation")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--eval-topk", o->eval_topk, "k predicted per row in evaluation (5..100)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(5, 100));
  cmd->add_flag("--eval-at-start,!--no-eval-at-start", o->eval_at_start,
                "also evaluate the untrained model at time 0")
      ->default_str(o->eval_at_start ? "on" : "off")
      ->group(g);
  cmd->add_option("--eval-max-points", o->eval_max_points,
                  "in-training evaluations score N test and validation rows, drawn at random "
                  "with a fixed seed (0 = all; -1 = auto: all when that costs at most 1e11 flops, "
                  "else at least 1000 rows; with validation data, at most max(1000, its rows) of "
                  "the test set, the final evaluation scoring the rest)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(-1, kMaxCount));
  cmd->add_flag("--exact-eval", o->exact_eval,
                "score the selected model exactly on the whole test set at the end, whatever it "
                "costs (default when that exceeds 1e12 flops: every row ranked through label "
                "clusters built from the model, scored exactly, their recall against exact "
                "printed; the cheapest search level with recall@1 and @5 of at least 0.95, else "
                "the best level if it reaches 0.80; below that or on a GPU, exact scoring of "
                "the first 1e12 flops of rows)")
      ->group(g);
  cmd->add_option("--psp-a", o->psp_a,
                  "propensity A of PSP@k (0 = by data name: amazon 0.6, wiki 0.5, else 0.55)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 10.0));
  cmd->add_option("--psp-b", o->psp_b,
                  "propensity B of PSP@k (0 = by data name: amazon 2.6, wiki 0.4, else 1.5)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 100.0));
  cmd->add_option("--time-budget", o->time_budget_s, "training seconds (0 = none)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1e9));
  cmd->add_option("--epochs", o->max_epochs,
                  "epochs (0 = none; auto: 25, or with a shortlisted output layer of at most "
                  "100,000 labels 8 passes of --decay-visits' clock, at most 3 million samples; "
                  "with auto patience and validation data evaluated in full, "
                  "raised to 300,000 samples' worth, patience ending the run)")
      ->default_str(o->max_epochs == kAutoEpochs ? "auto" : number_text(o->max_epochs))
      ->group(g)
      ->transform(auto_or_in_range(0.0, 1e6, kAutoEpochs));
  cmd->add_option("--max-rounds", o->max_rounds, "rounds (0 = none)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0, kMaxCount));
  cmd->add_option("--target-p1", o->target_p1,
                  "target P@1 (0 = none): the time the test curve reaches it is reported; train "
                  "stops when the VALIDATION P@1 reaches it (not with --no-stop-at-target); "
                  "without validation data it is reported, never acted on")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 1.0));
  cmd->add_flag("--stop-at-target,!--no-stop-at-target", o->stop_at_target,
                "stop training when the validation P@1 reaches --target-p1")
      ->default_str(o->stop_at_target ? "on" : "off")
      ->group(g);
  cmd->add_option("--ema", o->ema,
                  "decay of a moving average of the centre over rounds, the model evaluated and "
                  "saved (0 = off)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, 0.999999));
  cmd->add_flag("--keep-best,!--no-keep-best", o->keep_best,
                "save and report the model of the validation evaluation with the best P@1+P@3+P@5 "
                "(else the last)")
      ->default_str(o->keep_best ? "on" : "off")
      ->group(g);
  cmd->add_option("--patience", o->patience,
                  "stop after this many evaluations without a better validation P@1+P@3+P@5 "
                  "(0 = never; auto: 8, about 4 epochs, where --epochs is auto, no time budget "
                  "or round count is set and there is validation data; else never)")
      ->default_str(o->patience == kAutoPatience ? "auto" : number_text(o->patience))
      ->group(g)
      ->transform(auto_or_in_range(0, 1 << 30, kAutoPatience));
  cmd->add_option("--shuffle-seed", o->seed, "seed of the data order")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0.0, kMaxSeed));
  cmd->add_flag("--deterministic", o->deterministic,
                "adaptive: hand each round's batches out in slot order (reproducible runs; "
                "fast devices no longer take more within a round); it also freezes what "
                "follows measured speed: the proportional batch sizes and the round's growth "
                "with the merge time (the summary's devices show the batches used)")
      ->group(g);
  cmd->add_option("--checkpoint", o->checkpoint_path, "write checkpoints here")->group(g);
  cmd->add_option("--checkpoint-every", o->checkpoint_every_rounds,
                  "checkpoint every N rounds (0 = at the end only)")
      ->capture_default_str()
      ->group(g)
      ->check(in_range(0, 1 << 30));
  cmd->add_option("--resume", o->resume_path, "continue from this checkpoint")->group(g);
}

}  // namespace hetsgd::app
