// The named presets of the synthetic generator: the shapes of the XC Repository's sets.
#include "datasets/synthetic.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace hetsgd::datasets {
namespace {

// One preset: the set's shape and the planted structure that gives a trained model a plausible
// precision on it. Every field of SyntheticSpec that a preset chooses is a column, so the
// presets differ only in their numbers.
struct Preset {
  const char* name;
  index_t train_rows, test_rows, num_features, num_labels;
  double avg_nnz, avg_labels, label_power_law_exponent;
  index_t signature_size;
  double signature_fraction, label_correlation, decoy_fraction, decoy_ratio;
  bool binary_values;
};

// The large presets plant decoys: a signature draw is as likely to come from a decoy as from a
// true label (decoy_fraction / decoy_ratio == signature_fraction), so a signature feature
// alone leaves the label ambiguous and a trained full softmax settles well below P@1 = 1
// (wiki10-31k at full scale: ~0.46 after 5 epochs, ~0.6 after 10).
//
// amazon-3m is the XC Repository's Amazon-3M: 36.17 labels per point, 31.64 points per label
// counting train and test. Its table gives no features per point; 36 (assumed, product texts
// of the order of amazon-670k's) keeps the cost of a row plausible.
// clang-format off
constexpr Preset kPresets[] = {
  // name             train    test     features labels   nnz     labels exp  sig frac  corr decoy ratio binary
  {"tiny",            512,     128,     256,     32,      16.0,   2.0,   0.8, 6,  0.6,  0.5, 0.0,  0.0,  false},
  {"bibtex",          4880,    2515,    1836,    159,     68.7,   2.4,   0.8, 12, 0.35, 0.5, 0.0,  0.0,  true},
  {"delicious",       12920,   3185,    500,     983,     18.2,   19.0,  0.6, 8,  0.6,  0.6, 0.0,  0.0,  true},
  {"eurlex-4k",       15539,   3809,    5000,    3993,    236.0,  5.3,   0.8, 16, 0.35, 0.5, 0.0,  0.0,  false},
  {"amazon-670k",     490449,  153025,  135909,  670091,  75.0,   5.4,   0.7, 12, 0.6,  0.5, 0.0,  0.0,  false},
  {"wiki10-31k",      14146,   6616,    101938,  30938,   673.45, 18.64, 0.7, 12, 0.35, 0.5, 0.35, 1.0,  false},
  {"amazoncat-13k",   1186239, 306782,  203882,  13330,   71.09,  5.04,  0.9, 12, 0.35, 0.5, 0.35, 1.0,  false},
  {"delicious-200k",  196606,  100095,  782585,  205443,  301.17, 75.54, 0.6, 12, 0.35, 0.5, 0.35, 1.0,  false},
  {"wiki-500k",       1813391, 783743,  2381304, 501070,  385.31, 4.77,  0.7, 12, 0.35, 0.5, 0.35, 1.0,  false},
  {"amazon-3m",       1717899, 742507,  337067,  2812281, 36.0,   36.17, 0.7, 12, 0.6,  0.5, 0.0,  0.0,  false},
};
// clang-format on

}  // namespace

std::vector<std::string> synthetic_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

SyntheticSpec synthetic_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    SyntheticSpec s;
    s.name = name;
    s.train_rows = p.train_rows, s.test_rows = p.test_rows;
    s.num_features = p.num_features, s.num_labels = p.num_labels;
    s.avg_nnz = p.avg_nnz, s.avg_labels = p.avg_labels;
    s.label_power_law_exponent = p.label_power_law_exponent;
    s.signature_size = p.signature_size, s.signature_fraction = p.signature_fraction;
    s.label_correlation = p.label_correlation;
    s.decoy_fraction = p.decoy_fraction, s.decoy_ratio = p.decoy_ratio;
    s.binary_values = p.binary_values;
    return s;
  }
  std::string known;
  for (const auto& n : synthetic_preset_names()) known += (known.empty() ? "" : ", ") + n;
  HETSGD_CHECK(false, "unknown synthetic preset '" << name << "' (known: " << known << ")");
  return {};
}

SyntheticSpec scale_rows(SyntheticSpec spec, double row_scale) {
  HETSGD_CHECK(row_scale > 0.0, "row_scale " << row_scale << " <= 0");
  spec.train_rows =
      std::max<index_t>(1, std::llround(static_cast<double>(spec.train_rows) * row_scale));
  spec.test_rows =
      std::max<index_t>(1, std::llround(static_cast<double>(spec.test_rows) * row_scale));
  return spec;
}

SyntheticSpec with_rows(SyntheticSpec spec, index_t train_rows, index_t test_rows) {
  HETSGD_CHECK(train_rows >= 0 && test_rows >= 0,
               "negative rows " << train_rows << "/" << test_rows);
  spec.train_rows = train_rows;
  spec.test_rows = test_rows;
  return spec;
}

}  // namespace hetsgd::datasets
