#include "datasets/data_source.h"

#include <sstream>
#include <utility>

#include "core/error.h"
#include "datasets/load.h"
#include "datasets/synthetic.h"

namespace hetsgd::datasets {
namespace {

Dataset load_nonempty(const std::string& path, const char* what, const ShapeHint& hint,
                      const FormatChoice& choice, DataFormat* chosen) {
  Dataset d = load_dataset(path, hint, choice, chosen);
  HETSGD_CHECK(d.rows() > 0, path << ": " << what << " has no rows");
  return d;
}

}  // namespace

DataPair load_data_pair(const DataRequest& a) {
  DataPair out;
  if (!a.train_path.empty()) {
    DataFormat train_format = DataFormat::kLibsvm;
    out.train = load_nonempty(a.train_path, "training data", {}, a.format, &train_format);
    out.train_format = train_format;
    // A model needs at least one input and one output; say so naming the file, before the
    // model configuration refuses it without one.
    HETSGD_CHECK(out.train.num_features >= 1,
                 a.train_path << ": training data has num_features " << out.train.num_features
                              << " (a model needs at least 1 feature)");
    HETSGD_CHECK(out.train.num_labels >= 1, a.train_path << ": training data has num_labels "
                                                         << out.train.num_labels
                                                         << " (a model needs at least 1 label)");
    out.description = a.train_path;
    if (!a.test_path.empty()) {
      const ShapeHint hint{out.train.num_features, out.train.num_labels};
      FormatChoice test_choice = a.format;
      test_choice.companion = train_format;
      DataFormat test_format = DataFormat::kLibsvm;
      out.test = load_nonempty(a.test_path, "test data", hint, test_choice, &test_format);
      HETSGD_CHECK(out.test.num_labels == out.train.num_labels,
                   a.test_path << ": " << out.test.num_labels << " labels but " << a.train_path
                               << " has " << out.train.num_labels);
      HETSGD_CHECK(out.test.num_features <= out.train.num_features,
                   a.test_path << ": " << out.test.num_features << " features but " << a.train_path
                               << " has " << out.train.num_features);
      // Test rows are fed to a model of the training width.
      out.test.num_features = out.train.num_features;
    } else {
      out.test = out.train;
      out.test_is_train = true;
    }
    return out;
  }
  HETSGD_CHECK(a.test_path.empty(), "--test needs --train");
  SyntheticSpec spec = synthetic_preset(a.synthetic);
  if (a.scale != 1.0) spec = scale_rows(spec, a.scale);
  auto [train, test] = generate_synthetic(spec, a.data_seed);
  out.train = std::move(train);
  out.test = std::move(test);
  std::ostringstream os;
  os << "synthetic " << a.synthetic << "-shaped (seed " << a.data_seed << ", " << out.train.rows()
     << " train / " << out.test.rows() << " test rows)";
  out.description = os.str();
  return out;
}

}  // namespace hetsgd::datasets
