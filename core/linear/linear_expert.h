/// \file core/linear/linear_expert.h
/// One linear classifier per label (one-vs-rest), scored beside the network
/// (core/linear/README.md).
///
/// Label l's weights w_l and bias b_l minimise the L2-regularised squared hinge loss
///   1/2 |w_l|^2 + C sum_i max(0, 1 - y_il (w_l . x_i + b_l))^2,
/// y_il = +1 if row i has l, else -1,
/// the problem LIBLINEAR's `-s 1` solves, by the same method: coordinate descent on its dual
/// (Hsieh et al., ICML 2008) with shrinking. Weights below a threshold are dropped, as
/// napkinXC's models drop theirs. A row's score for label l is z_l = w_l . x + b_l, which the
/// Ranker reads as ln sigmoid(z_l): the label's own evidence, beside the network's softmax that
/// spreads one unit of probability over every label.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dataset.h"
#include "core/label_scores.h"

namespace hetsgd {

class LinearExpert;

/// How the classifiers are trained. The defaults were chosen on validation data
/// (core/linear/README.md).
struct LinearOptions {
  double cost = 0.5;       ///< C: the weight of the loss against the regulariser, > 0
  double tolerance = 0.1;  ///< a label stops when its projected gradients span at most this
  int max_passes = 20;     ///< most passes over the rows per label
  float prune = 0.2f;      ///< weights of magnitude below this are dropped, >= 0
  int threads = 0;         ///< threads training labels at once (0 = all)
  std::uint64_t seed = 1;  ///< the same seed and data train the same classifiers
  /// A pilot of this share of the labels (0 = none; a seeded random draw of them): once their
  /// classifiers are trained, `go_on` sees them (the other labels with no weight and bias -1)
  /// and which labels they are, and false ends the training with no classifiers. Going on
  /// trains the rest, so the classifiers are those trained without a pilot.
  double pilot_share = 0.0;
  std::function<bool(const LinearExpert& first, const std::vector<char>& trained)> go_on;
  /// Throws InvalidArgument naming the field when a value is out of its range.
  void validate() const;
};

/// Where labels are too many for each classifier to see every row: label l's classifier
/// trains on the rows that hold l, the rows whose shortlist names l (the negatives that look
/// most like its positives, as Slice and the rerankers of extreme classification train
/// theirs) and a seeded uniform sample of rows shared by every label, so that a label whose
/// shortlists bring it no negative still learns what it is not. Its scores count on the rows
/// a shortlist would bring l to; a blend leans on the other experts elsewhere.
struct LinearShortlist {
  int k = 0;                  ///< labels per row
  std::vector<col_t> labels;  ///< rows x k label ids, -1 padded (LabelForest::top_labels)
  index_t sample_rows = 0;    ///< rows every label sees (about this many), >= 0
};

class LinearExpert {
 public:
  /// Trains one classifier per label of `train` (in parallel, oneTBB; each label's order of
  /// rows from its own seed, so the result does not depend on the threads). A label no row
  /// holds gets weights 0 and bias -1. Returns an empty expert when `stop` becomes true first
  /// or the pilot's `go_on` says no (LinearOptions::pilot_share).
  /// With `shortlist`, each label trains on its shortlisted rows alone (LinearShortlist);
  /// throws InvalidArgument when its shape is not the training rows'.
  static LinearExpert train(const Dataset& train, const LinearOptions& options,
                            const std::atomic<bool>* stop = nullptr,
                            const LinearShortlist* shortlist = nullptr);

  bool empty() const { return bias_.empty(); }
  index_t num_features() const { return num_features_; }
  index_t num_labels() const { return num_labels_; }
  /// Weights kept over every label (biases aside).
  std::int64_t weights() const { return static_cast<std::int64_t>(labels_.size()); }

  /// Drops the smallest weights (by magnitude, the lower label and feature first among equals)
  /// until bytes() is at most `max_bytes`, or no weight is left.
  void fit_bytes(std::int64_t max_bytes);

  /// ln sigmoid(z_l) of row r's scores for each row r of `rows`: (*scores)[r] lists the labels
  /// the row's features reach; every other label scores its bias, whose ln sigmoid
  /// log_sigmoid_biases() gives. Feature ids at or above num_features() are ignored.
  /// Thread-safe.
  void log_sigmoid_scores(const CsrBatch& rows, LabelScoreRows* scores) const;
  /// ln sigmoid(b_l) of every label's bias.
  std::vector<float> log_sigmoid_biases() const;

  /// Appends the expert's bytes (little-endian, fixed-width fields) to `out`.
  void serialize(std::string* out) const;
  /// The number of bytes serialize() appends.
  std::int64_t bytes() const;
  /// Reads an expert written by serialize() for a model of `num_features` x `num_labels`;
  /// every offset, id and weight is checked (offsets ascending to the entry count, ids below
  /// their bounds, values finite), naming `name`.
  static LinearExpert parse(std::string_view bytes, index_t num_features, index_t num_labels,
                            const std::string& name);

  /// One label's classifier: its bias and its kept (feature, weight) pairs, by feature.
  struct Classifier {
    float bias = -1.0f;
    std::vector<std::pair<col_t, float>> kept;
  };

 private:
  struct Plan;  // each label's rows and each row's norm, made once per training
  static bool train_labels(const Dataset& train, const LinearOptions& o, const Plan& plan,
                           const std::vector<char>* labels, const std::atomic<bool>* stop,
                           std::vector<Classifier>* out);
  static LinearExpert assemble(index_t num_features, const std::vector<Classifier>& labels);

  index_t num_features_ = 0;
  index_t num_labels_ = 0;
  std::vector<float> bias_;                  ///< per label
  std::vector<std::int64_t> feature_begin_;  ///< features + 1 offsets into labels_ / weights_
  std::vector<col_t> labels_;                ///< by feature: the labels with a kept weight
  std::vector<float> weights_;
};

}  // namespace hetsgd
