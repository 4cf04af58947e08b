#include "core/model/model_io.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/forest/label_forest.h"
#include "core/memory_budget.h"
#include "core/param_layout.h"
#include "core/resident.h"

namespace hetsgd {
namespace {

// Bounds of the shape fields: ids are 32-bit, and --hidden accepts widths up to 2^20.
constexpr std::int64_t kMaxModelIds = std::int64_t{1} << 31;
constexpr std::int64_t kMaxHiddenLayers = 64;
constexpr std::int64_t kMaxHiddenWidth = std::int64_t{1} << 20;
constexpr std::uint32_t kOutputByInputVersion = 1;  // the output layer stored [in x L]
constexpr std::uint32_t kNoForestVersion = 2;       // parameters only, no forest trailer
constexpr std::uint32_t kForestOnlyVersion = 3;     // a forest trailer, no linear trailer

constexpr char kMagic[8] = {'H', 'E', 'T', 'S', 'G', 'D', 'M', 'D'};

template <class T>
void put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

/// Sequential reader over the file bytes with bounds checks that name the field.
class Reader {
 public:
  Reader(const std::string& path, std::string_view bytes, std::size_t end)
      : path_(path), bytes_(bytes), end_(end) {}
  template <class T>
  T get(const char* field) {
    if (pos_ + sizeof(T) > end_) {
      throw IoError(path_ + ": truncated model file: " + field + " at byte " +
                    std::to_string(pos_) + " needs " + std::to_string(sizeof(T)) +
                    " bytes, file has " + std::to_string(bytes_.size()));
    }
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::size_t pos() const { return pos_; }

 private:
  const std::string& path_;
  std::string_view bytes_;
  std::size_t end_;
  std::size_t pos_ = 0;
};

// Version 1 files hold the output layer's weights [in x L]; `params` (the file's parameters)
// is read in square tiles into the [L x in] block of `out`.
void output_by_label(const ParamLayout& layout, const char* params, std::vector<float>* out) {
  constexpr index_t kTile = 64;
  const LayerSlice& s = layout.layers().back();
  const char* w = params + s.w_offset * static_cast<index_t>(sizeof(float));
  float* dst = out->data() + s.w_offset;
  for (index_t i0 = 0; i0 < s.in; i0 += kTile) {
    for (index_t j0 = 0; j0 < s.out; j0 += kTile) {
      for (index_t i = i0; i < std::min(s.in, i0 + kTile); ++i) {
        for (index_t j = j0; j < std::min(s.out, j0 + kTile); ++j) {
          std::memcpy(dst + j * s.in + i, w + (i * s.out + j) * static_cast<index_t>(sizeof(float)),
                      sizeof(float));
        }
      }
    }
  }
}

}  // namespace

void save_model(const std::string& path, const SavedModel& model) {
  const ParamLayout layout(model.config);
  HETSGD_CHECK(
      static_cast<index_t>(model.params.size()) == layout.total(),
      "model has " << model.params.size() << " parameters, its shape needs " << layout.total());
  for (std::size_t k = 0; k < model.params.size(); ++k) {
    if (!std::isfinite(model.params[k])) {
      throw IoError(path + ": refusing to save a model whose parameter " + std::to_string(k) +
                    " is " + std::to_string(model.params[k]) + " (NaN or infinite)");
    }
  }
  // The header is built in memory; the parameters stream from the model into the file, so
  // saving takes no second copy of them (0.41 GB at 670,091 labels).
  std::string head;
  head.append(kMagic, sizeof kMagic);
  put(&head, kModelFileVersion);
  put(&head, static_cast<std::uint32_t>(model.config.loss));
  put(&head, static_cast<std::int64_t>(model.config.num_features));
  put(&head, static_cast<std::int64_t>(model.config.num_labels));
  put(&head, static_cast<std::int64_t>(model.config.hidden.size()));
  for (index_t h : model.config.hidden) put(&head, static_cast<std::int64_t>(h));
  put(&head, static_cast<std::int64_t>(model.params.size()));
  const std::size_t param_bytes = model.params.size() * sizeof(float);
  // The forest trailer: its blend weight, its length and its bytes (none: weight 0, length 0).
  // Each expert's bytes are reserved before it writes them (appended piece by piece, a 90 MB
  // forest was copied at every doubling of its string).
  std::string forest;
  if (model.forest != nullptr && model.forest_weight > 0.0) {
    forest.reserve(static_cast<std::size_t>(model.forest->bytes()));
    model.forest->serialize(&forest);
  }
  std::string tail;
  put(&tail, forest.empty() ? 0.0 : model.forest_weight);
  put(&tail, static_cast<std::uint64_t>(forest.size()));
  // The linear trailer, after the forest's bytes, the same way.
  std::string linear;
  if (model.linear != nullptr && model.linear_weight > 0.0) {
    const auto body = static_cast<std::uint64_t>(model.linear->bytes());
    linear.reserve(sizeof(double) + sizeof body + body);
    put(&linear, model.linear_weight);
    put(&linear, body);
    model.linear->serialize(&linear);
    HETSGD_CHECK(linear.size() == sizeof(double) + sizeof body + body,
                 "linear classifiers: serialize() wrote " << linear.size() - 16
                                                          << " bytes, bytes() " << body);
  } else {
    put(&linear, 0.0);
    put(&linear, std::uint64_t{0});
  }
  write_file_atomic(path, [&](const ByteSink& sink) {
    // The checksum trails the bytes it covers: it is summed as they stream, in one pass.
    Checksum64 sum;
    auto put_bytes = [&](const void* data, std::size_t bytes) {
      sum.update(data, bytes);
      sink(data, bytes);
    };
    put_bytes(head.data(), head.size());
    put_bytes(model.params.data(), param_bytes);
    put_bytes(tail.data(), tail.size());
    put_bytes(forest.data(), forest.size());
    put_bytes(linear.data(), linear.size());
    const std::uint64_t check = sum.finish();
    sink(&check, sizeof check);
  });
}

SavedModel parse_model(std::string_view bytes, const std::string& path) {
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw IoError(path + ": not a hetsgd model file (magic 'HETSGDMD' not found, file has " +
                  std::to_string(bytes.size()) + " bytes)");
  }
  const std::size_t body = bytes.size() - sizeof(std::uint64_t);
  Reader r(path, bytes, body);
  r.get<std::uint64_t>("magic");
  const auto version = r.get<std::uint32_t>("version");
  if (version != kModelFileVersion && version != kForestOnlyVersion &&
      version != kNoForestVersion && version != kOutputByInputVersion) {
    throw IoError(path + ": model file version " + std::to_string(version) +
                  " is not supported (this build reads versions " +
                  std::to_string(kOutputByInputVersion) + " to " +
                  std::to_string(kModelFileVersion) + ")");
  }
  SavedModel m;
  const auto loss = r.get<std::uint32_t>("loss");
  if (loss > static_cast<std::uint32_t>(Loss::kBce)) {
    throw IoError(path + ": field loss = " + std::to_string(loss) + " > " +
                  std::to_string(static_cast<int>(Loss::kBce)) + " (0 softmax, 1 bce)");
  }
  m.config.loss = static_cast<Loss>(loss);
  // Every shape field is range-checked before any size is computed from it, so a flipped bit
  // cannot overflow the layout arithmetic; the checksum comes after, once the sizes are known
  // to describe this very file.
  const auto in_range = [&](const std::string& field, std::int64_t v, std::int64_t hi) {
    if (v < 1 || v > hi) {
      throw IoError(path + ": field " + field + " = " + std::to_string(v) + " outside [1, " +
                    std::to_string(hi) + "]");
    }
  };
  m.config.num_features = r.get<std::int64_t>("num_features");
  in_range("num_features", m.config.num_features, kMaxModelIds);
  m.config.num_labels = r.get<std::int64_t>("num_labels");
  in_range("num_labels", m.config.num_labels, kMaxModelIds);
  const auto n_hidden = r.get<std::int64_t>("hidden count");
  in_range("hidden count", n_hidden, kMaxHiddenLayers);
  m.config.hidden.clear();
  for (std::int64_t i = 0; i < n_hidden; ++i) {
    const auto h = r.get<std::int64_t>("hidden width");
    in_range("hidden[" + std::to_string(i) + "]", h, kMaxHiddenWidth);
    m.config.hidden.push_back(h);
  }
  const auto count = r.get<std::int64_t>("parameter count");
  // Parameters the shape needs, in unsigned 64-bit arithmetic with overflow detection: each
  // factor is <= 2^31, so one product fits, but a sum of several may not.
  const std::vector<index_t> widths = m.config.widths();
  std::uint64_t needed = 0;
  bool overflow = false;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    std::uint64_t layer = 0;
    overflow |= __builtin_mul_overflow(static_cast<std::uint64_t>(widths[l]),
                                       static_cast<std::uint64_t>(widths[l + 1]), &layer);
    overflow |= __builtin_add_overflow(layer, static_cast<std::uint64_t>(widths[l + 1]), &layer);
    overflow |= __builtin_add_overflow(needed, layer, &needed);
  }
  // Version 3 files end with the forest trailer (double weight, uint64 length, bytes), version
  // 4 with the linear trailer after it. Parameters are counted in the bytes left before the
  // trailers; any beyond the shape's are the experts', so param_end + trailer <= body whenever
  // the count is accepted.
  const std::size_t expert_trailer = sizeof(double) + 8;
  const std::size_t trailer = version == kModelFileVersion    ? 2 * expert_trailer
                              : version == kForestOnlyVersion ? expert_trailer
                                                              : 0;
  const std::size_t after = body - r.pos();
  const std::size_t room = after >= trailer ? after - trailer : 0;
  std::size_t held = room / sizeof(float);
  if (trailer > 0 && !overflow && needed <= held) held = static_cast<std::size_t>(needed);
  const std::size_t param_end = r.pos() + held * sizeof(float);
  if (overflow || count < 0 || static_cast<std::uint64_t>(count) != needed || needed != held ||
      (trailer == 0 && after % sizeof(float) != 0)) {
    throw IoError(path + ": field parameter count = " + std::to_string(count) +
                  " but the shape needs " + (overflow ? "more than 2^64" : std::to_string(needed)) +
                  " and the file holds " + std::to_string(held) + " (truncated or corrupted)");
  }
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  const std::uint64_t actual = checksum64(bytes.data(), body);
  if (stored != actual) {
    throw IoError(path + ": checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                  std::to_string(actual) + "): the file is corrupted");
  }
  const char* params = bytes.data() + r.pos();
  if (trailer > 0) {
    // Each expert's trailer: its weight in [0, 1] (0 exactly when it holds none) and its
    // length, the last one's ending the file's body; returns its bytes.
    std::size_t at = param_end;
    std::size_t left = body - param_end - trailer;
    const auto expert = [&](const char* what, const char* none, bool last, double* weight) {
      std::uint64_t len = 0;
      std::memcpy(weight, bytes.data() + at, sizeof(double));
      std::memcpy(&len, bytes.data() + at + sizeof(double), sizeof len);
      if ((last ? len != left : len > left) || !(*weight >= 0.0 && *weight <= 1.0) ||
          (len == 0) != (*weight == 0.0)) {
        throw IoError(path + ": " + what + " trailer: weight " + std::to_string(*weight) +
                      " (in [0, 1], 0 exactly when there " + none + ") and length " +
                      std::to_string(len) + " (the file has " + std::to_string(left) +
                      " bytes left)");
      }
      const std::string_view section = bytes.substr(at + expert_trailer, len);
      at += expert_trailer + len;
      left -= len;
      return section;
    };
    const bool linear_follows = version == kModelFileVersion;
    const std::string_view forest =
        expert("forest", "is no forest", !linear_follows, &m.forest_weight);
    if (!forest.empty()) {
      m.forest = std::make_shared<const LabelForest>(
          LabelForest::parse(forest, m.config.num_features, m.config.num_labels, path));
    }
    if (linear_follows) {
      const std::string_view linear =
          expert("linear", "are no classifiers", true, &m.linear_weight);
      if (!linear.empty()) {
        m.linear = std::make_shared<const LinearExpert>(
            LinearExpert::parse(linear, m.config.num_features, m.config.num_labels, path));
      }
    }
  }
  for (std::size_t k = 0; k < held; ++k) {
    float v;
    std::memcpy(&v, params + k * sizeof(float), sizeof v);
    if (!std::isfinite(v)) {
      throw IoError(path + ": parameter " + std::to_string(k) + " of " + std::to_string(held) +
                    " is " + std::to_string(v) +
                    ": a model with NaN or infinite parameters "
                    "is refused (the training run that wrote it diverged)");
    }
  }
  check_memory(held * sizeof(float), "loading model '" + path + "'");
  resize_resident(&m.params, held);
  std::memcpy(m.params.data(), params, held * sizeof(float));
  if (version == kOutputByInputVersion) output_by_label(ParamLayout(m.config), params, &m.params);
  return m;
}

SavedModel load_model(const std::string& path) {
  const MappedFile file(path);
  return parse_model(file.view(), path);
}

void check_model_fits(const ModelConfig& config, const std::string& model_path, const Dataset& data,
                      const std::string& data_path) {
  HETSGD_CHECK(data.num_features <= config.num_features,
               data_path << ": " << data.num_features << " features but model " << model_path
                         << " was trained on " << config.num_features);
  HETSGD_CHECK(data.num_labels == config.num_labels, data_path << ": " << data.num_labels
                                                               << " labels but model " << model_path
                                                               << " has " << config.num_labels);
}

}  // namespace hetsgd
