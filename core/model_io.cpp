#include "core/model_io.h"

#include <cstring>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/param_layout.h"

namespace hetsgd {
namespace {

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

}  // namespace

void save_model(const std::string& path, const SavedModel& model) {
  const ParamLayout layout(model.config);
  HETSGD_CHECK(
      static_cast<index_t>(model.params.size()) == layout.total(),
      "model has " << model.params.size() << " parameters, its shape needs " << layout.total());
  std::string out;
  out.reserve(64 + model.params.size() * sizeof(float));
  out.append(kMagic, sizeof kMagic);
  put(&out, kModelFileVersion);
  put(&out, static_cast<std::uint32_t>(model.config.loss));
  put(&out, static_cast<std::int64_t>(model.config.num_features));
  put(&out, static_cast<std::int64_t>(model.config.num_labels));
  put(&out, static_cast<std::int64_t>(model.config.hidden.size()));
  for (index_t h : model.config.hidden) put(&out, static_cast<std::int64_t>(h));
  put(&out, static_cast<std::int64_t>(model.params.size()));
  out.append(reinterpret_cast<const char*>(model.params.data()),
             model.params.size() * sizeof(float));
  put(&out, checksum64(out.data(), out.size()));
  write_file_atomic(path, out);
}

SavedModel load_model(const std::string& path) {
  const MappedFile file(path);
  const std::string_view bytes = file.view();
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw IoError(path + ": not a hetsgd model file (magic 'HETSGDMD' not found, file has " +
                  std::to_string(bytes.size()) + " bytes)");
  }
  const std::size_t body = bytes.size() - sizeof(std::uint64_t);
  Reader r(path, bytes, body);
  r.get<std::uint64_t>("magic");
  const auto version = r.get<std::uint32_t>("version");
  if (version != kModelFileVersion) {
    throw IoError(path + ": model file version " + std::to_string(version) +
                  " is not supported (this build reads version " +
                  std::to_string(kModelFileVersion) + ")");
  }
  SavedModel m;
  const auto loss = r.get<std::uint32_t>("loss");
  if (loss > static_cast<std::uint32_t>(Loss::kBce)) {
    throw IoError(path + ": loss code " + std::to_string(loss) + " > " +
                  std::to_string(static_cast<int>(Loss::kBce)));
  }
  m.config.loss = static_cast<Loss>(loss);
  m.config.num_features = r.get<std::int64_t>("num_features");
  m.config.num_labels = r.get<std::int64_t>("num_labels");
  const auto n_hidden = r.get<std::int64_t>("hidden count");
  if (n_hidden < 1 || n_hidden > 64) {
    throw IoError(path + ": hidden layer count " + std::to_string(n_hidden) + " outside [1, 64]");
  }
  m.config.hidden.clear();
  for (std::int64_t i = 0; i < n_hidden; ++i)
    m.config.hidden.push_back(r.get<std::int64_t>("hidden"));
  const auto count = r.get<std::int64_t>("parameter count");
  if (m.config.num_features < 1 || m.config.num_labels < 1) {
    throw IoError(path + ": shape " + std::to_string(m.config.num_features) + " x " +
                  std::to_string(m.config.num_labels) + " is not a valid model");
  }
  for (index_t h : m.config.hidden) {
    if (h < 1) throw IoError(path + ": hidden width " + std::to_string(h) + " < 1");
  }
  const ParamLayout layout(m.config);
  if (count != layout.total() ||
      r.pos() + static_cast<std::size_t>(count) * sizeof(float) != body) {
    throw IoError(path + ": parameter count " + std::to_string(count) + " but the shape needs " +
                  std::to_string(layout.total()) + " and the file holds " +
                  std::to_string((body - r.pos()) / sizeof(float)) + " (truncated?)");
  }
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  const std::uint64_t actual = checksum64(bytes.data(), body);
  if (stored != actual) {
    throw IoError(path + ": checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                  std::to_string(actual) + "): the file is corrupted");
  }
  m.params.resize(static_cast<std::size_t>(count));
  std::memcpy(m.params.data(), bytes.data() + r.pos(), m.params.size() * sizeof(float));
  return m;
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
