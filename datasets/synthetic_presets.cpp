// The named presets of the synthetic generator: the shapes of the XC Repository's sets.
#include "datasets/synthetic.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace hetsgd::datasets {
namespace {

// The planted structure of the large presets: a signature draw is as likely to come from a
// decoy as from a true label (decoy_fraction / decoy_ratio == signature_fraction), so a
// signature feature alone leaves the label ambiguous and a trained full softmax settles well
// below P@1 = 1 (wiki10-31k at full scale: ~0.46 after 5 epochs, ~0.6 after 10).
void set_decoyed_signatures(SyntheticSpec* s) {
  s->signature_size = 12;
  s->signature_fraction = 0.35;
  s->decoy_fraction = 0.35;
  s->decoy_ratio = 1.0;
}

}  // namespace

std::vector<std::string> synthetic_preset_names() {
  return {"tiny",       "bibtex",        "delicious",      "eurlex-4k", "amazon-670k",
          "wiki10-31k", "amazoncat-13k", "delicious-200k", "wiki-500k", "amazon-3m"};
}

SyntheticSpec synthetic_preset(const std::string& name) {
  SyntheticSpec s;
  s.name = name;
  if (name == "tiny") {
    s.train_rows = 512, s.test_rows = 128, s.num_features = 256, s.num_labels = 32;
    s.avg_nnz = 16.0, s.avg_labels = 2.0, s.signature_size = 6;
    s.label_power_law_exponent = 0.8;
  } else if (name == "bibtex") {
    s.train_rows = 4880, s.test_rows = 2515, s.num_features = 1836, s.num_labels = 159;
    s.avg_nnz = 68.7, s.avg_labels = 2.4, s.binary_values = true;
    s.label_power_law_exponent = 0.8, s.signature_size = 12, s.signature_fraction = 0.35;
  } else if (name == "delicious") {
    s.train_rows = 12920, s.test_rows = 3185, s.num_features = 500, s.num_labels = 983;
    s.avg_nnz = 18.2, s.avg_labels = 19.0, s.binary_values = true;
    s.label_power_law_exponent = 0.6, s.signature_size = 8, s.label_correlation = 0.6;
  } else if (name == "eurlex-4k") {
    s.train_rows = 15539, s.test_rows = 3809, s.num_features = 5000, s.num_labels = 3993;
    s.avg_nnz = 236.0, s.avg_labels = 5.3;
    s.label_power_law_exponent = 0.8, s.signature_size = 16, s.signature_fraction = 0.35;
  } else if (name == "amazon-670k") {
    s.train_rows = 490449, s.test_rows = 153025, s.num_features = 135909, s.num_labels = 670091;
    s.avg_nnz = 75.0, s.avg_labels = 5.4;
    s.label_power_law_exponent = 0.7, s.signature_size = 12;
  } else if (name == "wiki10-31k") {
    s.train_rows = 14146, s.test_rows = 6616, s.num_features = 101938, s.num_labels = 30938;
    s.avg_nnz = 673.45, s.avg_labels = 18.64;
    s.label_power_law_exponent = 0.7;
    set_decoyed_signatures(&s);
  } else if (name == "amazoncat-13k") {
    s.train_rows = 1186239, s.test_rows = 306782, s.num_features = 203882, s.num_labels = 13330;
    s.avg_nnz = 71.09, s.avg_labels = 5.04;
    s.label_power_law_exponent = 0.9;
    set_decoyed_signatures(&s);
  } else if (name == "delicious-200k") {
    s.train_rows = 196606, s.test_rows = 100095, s.num_features = 782585, s.num_labels = 205443;
    s.avg_nnz = 301.17, s.avg_labels = 75.54;
    s.label_power_law_exponent = 0.6;
    set_decoyed_signatures(&s);
  } else if (name == "wiki-500k") {
    s.train_rows = 1813391, s.test_rows = 783743, s.num_features = 2381304, s.num_labels = 501070;
    s.avg_nnz = 385.31, s.avg_labels = 4.77;
    s.label_power_law_exponent = 0.7;
    set_decoyed_signatures(&s);
  } else if (name == "amazon-3m") {
    // The XC Repository's Amazon-3M: 36.17 labels per point, 31.64 points per label counting
    // train and test. Its table gives no features per point; 36 (assumed, product texts of
    // the order of amazon-670k's) keeps the cost of a row plausible.
    s.train_rows = 1717899, s.test_rows = 742507, s.num_features = 337067, s.num_labels = 2812281;
    s.avg_nnz = 36.0, s.avg_labels = 36.17;
    s.label_power_law_exponent = 0.7, s.signature_size = 12;
  } else {
    std::string known;
    for (const auto& n : synthetic_preset_names()) known += (known.empty() ? "" : ", ") + n;
    HETSGD_CHECK(false, "unknown synthetic preset '" << name << "' (known: " << known << ")");
  }
  return s;
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
