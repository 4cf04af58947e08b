#include "core/model_config.h"

#include "core/error.h"

namespace hetsgd {

std::vector<index_t> ModelConfig::widths() const {
  std::vector<index_t> w;
  w.reserve(hidden.size() + 2);
  w.push_back(num_features);
  w.insert(w.end(), hidden.begin(), hidden.end());
  w.push_back(num_labels);
  return w;
}

bool ModelConfig::resolved() const {
  return !hidden.empty() && dropout != kAutoRate && label_smoothing != kAutoRate;
}

void ModelConfig::validate() const {
  HETSGD_CHECK(resolved(),
               "the model's hidden widths, dropout or label smoothing are automatic "
               "(hidden empty, or kAutoRate): resolve_model() fills them");
  HETSGD_CHECK(num_features >= 1, "num_features " << num_features << " < 1");
  HETSGD_CHECK(num_labels >= 1, "num_labels " << num_labels << " < 1");
  for (index_t h : hidden) HETSGD_CHECK(h >= 1, "hidden width " << h << " < 1");
  const ShortlistConfig& s = shortlist;
  HETSGD_CHECK(s.score_chunk >= 1, "shortlist.score_chunk " << s.score_chunk << " < 1");
  HETSGD_CHECK(s.auto_labels >= 0, "shortlist.auto_labels " << s.auto_labels << " < 0");
  HETSGD_CHECK(s.hard_negatives >= 0, "shortlist.hard_negatives " << s.hard_negatives << " < 0");
  HETSGD_CHECK(s.sampled_negatives >= 0,
               "shortlist.sampled_negatives " << s.sampled_negatives << " < 0");
  HETSGD_CHECK(s.max_positives >= 0, "shortlist.max_positives " << s.max_positives << " < 0");
  HETSGD_CHECK(s.rebuild_steps >= 1, "shortlist.rebuild_steps " << s.rebuild_steps << " < 1");
  HETSGD_CHECK(s.index_duty > 0.0 && s.index_duty <= 1.0,
               "shortlist.index_duty " << s.index_duty << " outside (0, 1]");
  HETSGD_CHECK(s.ann_m >= 2, "shortlist.ann_m " << s.ann_m << " < 2");
  HETSGD_CHECK(s.ann_ef_construction >= 1,
               "shortlist.ann_ef_construction " << s.ann_ef_construction << " < 1");
  HETSGD_CHECK(s.ann_ef_search >= s.hard_negatives, "shortlist.ann_ef_search "
                                                        << s.ann_ef_search << " < hard_negatives "
                                                        << s.hard_negatives);
  HETSGD_CHECK(s.lr_scale > 0.0f, "shortlist.lr_scale " << s.lr_scale << " <= 0");
  HETSGD_CHECK(dropout >= 0.0f && dropout <= kMaxDropout,
               "dropout " << dropout << " outside [0, " << kMaxDropout << "]");
  HETSGD_CHECK(input_dropout >= 0.0f && input_dropout <= kMaxDropout,
               "input dropout " << input_dropout << " outside [0, " << kMaxDropout << "]");
  HETSGD_CHECK(
      label_smoothing >= 0.0f && label_smoothing <= kMaxLabelSmoothing,
      "label smoothing " << label_smoothing << " outside [0, " << kMaxLabelSmoothing << "]");
  HETSGD_CHECK(
      label_smoothing == 0.0f || loss == Loss::kSoftmax,
      "label smoothing " << label_smoothing << " needs the softmax loss, not " << to_string(loss));
}

bool ModelConfig::uses_shortlist() const {
  return output_layer == OutputLayer::kShortlist ||
         (output_layer == OutputLayer::kAuto && num_labels > shortlist.auto_labels);
}

template <>
const NameTable<Loss>& name_table<Loss>() {
  static const NameTable<Loss> t = {{"softmax", Loss::kSoftmax}, {"bce", Loss::kBce}};
  return t;
}

template <>
const NameTable<OptimizerKind>& name_table<OptimizerKind>() {
  static const NameTable<OptimizerKind> t = {{"sgd", OptimizerKind::kSgd},
                                             {"adam", OptimizerKind::kAdam}};
  return t;
}

template <>
const NameTable<OutputLayer>& name_table<OutputLayer>() {
  static const NameTable<OutputLayer> t = {{"full", OutputLayer::kFull},
                                           {"shortlist", OutputLayer::kShortlist},
                                           {"auto", OutputLayer::kAuto}};
  return t;
}

Loss parse_loss(const std::string& name) { return parse_enum<Loss>(name, "loss"); }
const char* to_string(Loss loss) { return enum_name(loss); }
OptimizerKind parse_optimizer(const std::string& name) {
  return parse_enum<OptimizerKind>(name, "optimizer");
}
const char* to_string(OptimizerKind kind) { return enum_name(kind); }
OutputLayer parse_output_layer(const std::string& name) {
  return parse_enum<OutputLayer>(name, "output layer");
}
const char* to_string(OutputLayer layer) { return enum_name(layer); }

ModelConfig resolve_model(ModelConfig c, double memory_bytes) {
  const AutoModel automatic =
      auto_model(c.num_labels, kWideModelMaxLabels, memory_bytes, c.num_features);
  if (c.hidden.empty()) c.hidden = automatic.hidden;
  if (c.dropout == kAutoRate) c.dropout = automatic.dropout;
  if (c.label_smoothing == kAutoRate) {
    // Only where it can run: the softmax loss with every label in one block
    // (kernels/cpu/output_strategy.cpp); elsewhere it stays off.
    const bool can_smooth =
        c.loss == Loss::kSoftmax && !c.uses_shortlist() && c.num_labels <= c.shortlist.score_chunk;
    c.label_smoothing = can_smooth ? automatic.label_smoothing : 0.0f;
  }
  return c;
}

AutoModel auto_model(index_t num_labels, index_t auto_labels, double memory_bytes,
                     index_t num_features) {
  if (num_labels <= auto_labels) {
    index_t wide = 512;
    const auto wide_bytes = [&](index_t h) {
      return 5.0 * 4.0 * (static_cast<double>(num_features) + static_cast<double>(num_labels)) *
             static_cast<double>(h);
    };
    while (wide > 128 && wide_bytes(wide) > kWideModelBytes) wide /= 2;
    return {{wide}, 0.5f, 0.3f};
  }
  index_t hidden = 128;
  // Output weights + bias, two lazy-Adam moments, and a second replica's weights: 5 copies.
  const auto output_bytes = [&](index_t h) {
    return 5.0 * 4.0 * static_cast<double>(num_labels) * static_cast<double>(h + 1);
  };
  while (memory_bytes > 0 && hidden > 64 && output_bytes(hidden) > memory_bytes / 3) hidden /= 2;
  return {{hidden}, 0.0f, 0.0f};
}

}  // namespace hetsgd
