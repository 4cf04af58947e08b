/// \file core/model_config.h
/// The sparse-input MLP (core/README.md §Model) and its optimiser, as plain configuration values.
///
/// Layers: input (num_features, sparse) -> hidden[0] -> ... -> hidden[H-1] -> num_labels, ReLU
/// after every hidden layer. Weights are stored row-major as [in x out], so the first layer's
/// row f is the embedding of feature f and its gradient is row-sparse.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/types.h"

namespace hetsgd {

/// Output loss.
enum class Loss {
  kSoftmax,  ///< softmax cross-entropy against the multi-hot target normalised to sum 1
  kBce,      ///< one-vs-all sigmoid binary cross-entropy, averaged over labels
};

/// Optimiser kind. State is per replica; on the sparse first layer it is updated lazily
/// (only rows of features present in the batch).
enum class OptimizerKind { kSgd, kAdam };

/// Optimiser hyper-parameters. The learning rate is not here: the scheduler passes it per step.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float momentum = 0.0f;      ///< SGD heavy-ball momentum (0 = plain SGD)
  float beta1 = 0.9f;         ///< Adam
  float beta2 = 0.999f;       ///< Adam
  float eps = 1e-8f;          ///< Adam
  float weight_decay = 0.0f;  ///< L2 on weights (not biases), applied to touched rows only
};

/// How the output layer scores labels during training.
enum class OutputLayer {
  kFull,       ///< every label, every step (scored in chunks of ShortlistConfig::score_chunk)
  kShortlist,  ///< only a per-batch candidate set (positives + hard + sampled negatives)
  kAuto,       ///< kShortlist when num_labels > ShortlistConfig::auto_labels, else kFull
};

/// Knobs of the output layer: chunked scoring (both modes) and the shortlist. A shortlisted
/// step scores, per batch, the union of the batch's positive labels, `hard_negatives` nearest
/// labels of each row from an approximate nearest-neighbour index over the output layer's
/// label vectors (queried with the row's last hidden activations), and `sampled_negatives`
/// labels drawn uniformly. The index is rebuilt from the current weights every
/// `rebuild_steps` optimiser steps (see wait_for_index). Evaluation and prediction always score
/// every label.
struct ShortlistConfig {
  /// Labels scored at a time when every label is scored (full training, evaluation,
  /// prediction): host memory for scores is O(batch x score_chunk), never O(batch x L).
  index_t score_chunk = 4096;
  /// kAuto picks the shortlist above this label count: above one scoring block the full
  /// softmax costs 2 L h flops a sample three times over, and on debian-deps (22,912 labels)
  /// six shortlisted epochs beat 25 full ones on validation at a twentieth of the time
  /// (apps/DEFAULTS.md).
  index_t auto_labels = 4096;
  int hard_negatives = 10;       ///< ANN neighbours per batch row (0 = no index)
  int sampled_negatives = 1024;  ///< uniform negatives per batch (with replacement, deduplicated)
  /// Positives of a row a step trains on (0 = all): a row with more labels has this many
  /// drawn uniformly without replacement each step, its targets 1 / max_positives each, and
  /// its other labels left out of its loss (neither target nor negative). A step's candidates
  /// grow with the batch's distinct positives; at amazon-3m's 36 labels a row they would be
  /// 4,600 of a batch of 128's candidates.
  int max_positives = 16;
  int rebuild_steps = 100;  ///< optimiser steps between index rebuilds (>= 1)
  /// True: a build starts at every rebuild step and is installed at the next one (waiting
  /// for it; `--index-wait`, implied by `--deterministic`). False (the default): builds start
  /// and are installed at steps scheduled from their expected cost (see index_duty), waiting
  /// only for a build not done by its install step. Either way the index a step uses does not
  /// depend on timing (kernels/cpu/shortlist.h).
  bool wait_for_index = false;
  /// Without wait_for_index: the fraction of the steps builds are expected to run (a build
  /// expected to last E steps is followed by the next E / index_duty steps after its start).
  /// In (0, 1].
  double index_duty = 0.25;
  int ann_m = 8;                 ///< HNSW graph degree M (links per node on upper levels)
  int ann_ef_construction = 16;  ///< HNSW candidate list size while building
  int ann_ef_search = 16;        ///< HNSW candidate list size per query (>= hard_negatives)
  /// Optimiser of the output layer's weights and bias in shortlist mode: kAdam (lazy Adam on
  /// the candidates' rows, with the model optimiser's betas; the default, chosen on validation
  /// P@1: with the model's learning rate plain SGD trails it by 2.5 to 6 points on delicious)
  /// or kSgd (plain SGD, the Renee paper's choice: cheaper and no state on L x hidden weights,
  /// but it needs its own rate, --output-lr-scale). Full mode uses the model optimiser.
  OptimizerKind optimizer = OptimizerKind::kAdam;
  float lr_scale = 1.0f;  ///< output-layer learning rate = lr_scale x the scheduler's rate
};

/// A dropout or label smoothing left to resolve_model() (`hetsgd train`'s unset option).
inline constexpr float kAutoRate = -1.0f;
/// Largest dropout probability accepted, of the hidden layers and of the input (validate()):
/// at p = 1 nothing is kept.
inline constexpr double kMaxDropout = 0.95;
/// Largest label smoothing accepted (validate()): at e = 1 the target ignores the labels.
inline constexpr double kMaxLabelSmoothing = 0.5;

/// Shape and loss of the model. Its defaults are `hetsgd train`'s: the hidden widths, the
/// dropout and the label smoothing are automatic until resolve_model() fills them from the
/// data's shape (make_replicas() does; a device refuses a config that is not resolved), and
/// the output layer is kAuto. Every explicit value means what it says.
struct ModelConfig {
  index_t num_features = 0;     ///< d
  index_t num_labels = 0;       ///< L
  std::vector<index_t> hidden;  ///< hidden layer widths (at least one); empty = automatic
  Loss loss = Loss::kSoftmax;
  OptimizerConfig optimizer;
  std::uint64_t seed = 1;  ///< initialisation seed
  OutputLayer output_layer = OutputLayer::kAuto;
  ShortlistConfig shortlist;
  // Training-only regularisation (core/math/dropout.h, input_dropout.h, label_smoothing.h):
  // evaluation and prediction ignore both, so the model file does not store them. 0 turns each off
  // and leaves training bitwise what it was without it; kAutoRate is resolve_model()'s choice.
  float dropout = kAutoRate;   ///< inverted dropout on every hidden layer's output, [0, 0.95]
  float input_dropout = 0.0f;  ///< dropout of the input's stored feature values, [0, 0.95]
  float label_smoothing = kAutoRate;  ///< softmax target smoothing e, [0, 0.5]; softmax loss only

  /// True when training scores a shortlist (kShortlist, or kAuto above auto_labels).
  bool uses_shortlist() const;

  /// Layer widths: {d, hidden..., L}.
  std::vector<index_t> widths() const;
  /// True when no field is left automatic (the output layer's kAuto is resolved at use).
  bool resolved() const;
  /// Throws InvalidArgument if a field is still automatic, any width is < 1 or a shortlist
  /// knob is out of range.
  void validate() const;
};

/// Most labels the wide automatic model (hidden 512, dropout 0.5) is given: above, the output
/// layer dominates memory (auto_model()).
inline constexpr index_t kWideModelMaxLabels = 100000;

/// What `--hidden=auto` and an unset `--dropout` and `--label-smoothing` resolve to for
/// `num_labels` labels (apps/DEFAULTS.md has the table). Up to `auto_labels` (the full
/// softmax's range, bibtex, delicious, wiki10-31k): hidden 512 with dropout 0.5, chosen on
/// bibtex and delicious validation P@1, and label smoothing 0.3, chosen on their validation
/// P@1 + P@3 + P@5 over five validation splits (softmax loss only). Above it (shortlisted output
/// layer): hidden 128 without dropout, the width whose output layer and lazy-Adam moments at
/// 670,091 labels (1.0 GB) fit a 2.5 GB run, and `memory_bytes` (0 = unknown) halves it further,
/// down to 64, while the output layer with its moments and two replicas would take more than a
/// third of it.
struct AutoModel {
  std::vector<index_t> hidden;
  float dropout = 0.0f;
  float label_smoothing = 0.0f;  ///< applies to the softmax loss only
};
AutoModel auto_model(index_t num_labels, index_t auto_labels, double memory_bytes = 0.0,
                     index_t num_features = 0);
/// `config` with its automatic fields filled as `hetsgd train` fills them (apps/DEFAULTS.md):
/// the hidden widths, the dropout and the label smoothing of auto_model() for its label and
/// feature counts and `memory_bytes` (0 = unknown; the command line passes the memory
/// available), the smoothing only where it can run (the softmax loss with every label in one
/// scoring block, else 0). Explicit values are kept. The one place the defaults resolve: the
/// command line, compare, share's jobs, the Python package and make_replicas() call it.
ModelConfig resolve_model(ModelConfig config, double memory_bytes);

/// Most bytes the wide model's layers may take with their training state (5 copies of
/// (d + L) x hidden floats: the replica's weights, the centre's, Adam's two moments and a
/// second replica's rows): hidden 512 halves, down to 128, until it fits. At the amazoncat-13k
/// shape (203,882 features) 512 would take 2.2 GB and the run with its data more than 2.5 GB;
/// 256 takes 1.1 GB. bibtex, delicious, eurlex-4k, wiki10-31k and debian-deps keep 512.
inline constexpr double kWideModelBytes = 1.5e9;

/// The names of the model's enumerations (core/enum_names.h): "softmax", "bce"; "sgd",
/// "adam"; "full", "shortlist", "auto".
template <>
const NameTable<Loss>& name_table<Loss>();
template <>
const NameTable<OptimizerKind>& name_table<OptimizerKind>();
template <>
const NameTable<OutputLayer>& name_table<OutputLayer>();

/// Name <-> value through the tables; the parsers throw InvalidArgument on an unknown name.
Loss parse_loss(const std::string& name);
const char* to_string(Loss loss);
OptimizerKind parse_optimizer(const std::string& name);
const char* to_string(OptimizerKind kind);
OutputLayer parse_output_layer(const std::string& name);
const char* to_string(OutputLayer layer);

}  // namespace hetsgd
