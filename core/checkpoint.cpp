#include "core/checkpoint.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "core/checksum.h"
#include "core/error.h"
#include "core/file_io.h"

namespace hetsgd {
namespace {

constexpr char kMagic[8] = {'H', 'S', 'G', 'D', 'C', 'K', 'P', 'T'};

class Writer {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<std::uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const char*>(v.data());
    buf_.insert(buf_.end(), p, p + v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  const std::vector<char>& bytes() const { return buf_; }

 private:
  std::vector<char> buf_;
};

// Throws IoError; a macro keeps the streamed message syntax of HETSGD_CHECK.
#define HETSGD_CHECK_IO(cond, msg)                               \
  do {                                                           \
    if (!(cond)) {                                               \
      std::ostringstream os_;                                    \
      os_ << path_ << ": corrupted checkpoint payload: " << msg; \
      throw IoError(os_.str());                                  \
    }                                                            \
  } while (false)

class Reader {
 public:
  Reader(const std::vector<char>& buf, const std::string& path) : buf_(buf), path_(path) {}
  template <class T>
  T pod() {
    T v;
    need(sizeof(T));
    std::memcpy(&v, buf_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = pod<std::uint64_t>();
    HETSGD_CHECK_IO(n <= (buf_.size() - pos_) / sizeof(T), "vector length " << n);
    std::vector<T> v(static_cast<size_t>(n));
    // An empty vector's data() may be null, and memcpy from/to null is undefined even for 0.
    if (n > 0) std::memcpy(v.data(), buf_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    need(n);
    std::string s(buf_.data() + pos_, static_cast<size_t>(n));
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == buf_.size(); }

 private:
  void need(std::uint64_t n) const {
    HETSGD_CHECK_IO(n <= buf_.size() - pos_,
                    "needs " << n << " more bytes at offset " << pos_ << " of " << buf_.size());
  }
  const std::vector<char>& buf_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

void save_checkpoint(const std::string& path, const TrainCheckpoint& c) {
  HETSGD_CHECK(!path.empty(), "save_checkpoint: empty path");
  Writer w;
  w.str(c.algo);
  w.str(c.options_text);
  w.pod(c.options_fingerprint);
  w.pod(c.param_count);
  w.vec(c.centre);
  w.vec(c.previous_centre);
  w.vec(c.batch_sizes);
  w.vec(c.throughput);
  w.vec(c.alive);
  w.pod(static_cast<std::uint8_t>(c.past_warmup ? 1 : 0));
  w.pod(c.round);
  w.pod(c.train_seconds);
  w.pod(c.eval_seconds);
  w.pod(c.evaluations);
  w.pod(c.best_p1);
  w.pod(c.time_to_target_s);
  w.pod(c.cursor.seed);
  w.pod(c.cursor.num_points);
  w.pod(c.cursor.epoch);
  w.pod(c.cursor.position);
  w.pod(c.cursor.consumed);
  w.vec(c.cursor.permutation);
  w.vec(c.cursor.requeued);
  const std::vector<char>& payload = w.bytes();
  const std::uint64_t size = payload.size();
  const std::uint64_t sum = checksum64(payload.data(), payload.size());
  write_file_atomic(path, [&](const ByteSink& sink) {
    sink(kMagic, sizeof kMagic);
    sink(&kCheckpointVersion, sizeof kCheckpointVersion);
    sink(&size, sizeof size);
    sink(&sum, sizeof sum);
    sink(payload.data(), payload.size());
  });
}

TrainCheckpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open checkpoint");
  char magic[8];
  std::uint32_t version = 0;
  std::uint64_t size = 0, sum = 0;
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    throw IoError(path + ": not a hetsgd checkpoint (bad magic)");
  }
  in.read(reinterpret_cast<char*>(&version), sizeof version);
  in.read(reinterpret_cast<char*>(&size), sizeof size);
  in.read(reinterpret_cast<char*>(&sum), sizeof sum);
  if (!in) throw IoError(path + ": truncated checkpoint header");
  if (version != kCheckpointVersion) {
    throw IoError(path + ": checkpoint format version " + std::to_string(version) +
                  " is not supported (this build reads version " +
                  std::to_string(kCheckpointVersion) + ")");
  }
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t header = sizeof magic + sizeof version + sizeof size + sizeof sum;
  if (file_size != header + size) {
    throw IoError(path + ": checkpoint is " + std::to_string(file_size) + " bytes, header says " +
                  std::to_string(header + size) + " (truncated or extended)");
  }
  in.seekg(static_cast<std::streamoff>(header));
  std::vector<char> payload(static_cast<size_t>(size));
  in.read(payload.data(), static_cast<std::streamsize>(size));
  if (!in) throw IoError(path + ": truncated checkpoint payload");
  if (checksum64(payload.data(), payload.size()) != sum) {
    throw IoError(path + ": checkpoint checksum mismatch (file corrupted)");
  }
  Reader r(payload, path);
  TrainCheckpoint c;
  c.algo = r.str();
  c.options_text = r.str();
  c.options_fingerprint = r.pod<std::uint64_t>();
  c.param_count = r.pod<index_t>();
  c.centre = r.vec<float>();
  c.previous_centre = r.vec<float>();
  c.batch_sizes = r.vec<index_t>();
  c.throughput = r.vec<double>();
  c.alive = r.vec<std::uint8_t>();
  c.past_warmup = r.pod<std::uint8_t>() != 0;
  c.round = r.pod<index_t>();
  c.train_seconds = r.pod<double>();
  c.eval_seconds = r.pod<double>();
  c.evaluations = r.pod<index_t>();
  c.best_p1 = r.pod<double>();
  c.time_to_target_s = r.pod<double>();
  c.cursor.seed = r.pod<std::uint64_t>();
  c.cursor.num_points = r.pod<index_t>();
  c.cursor.epoch = r.pod<index_t>();
  c.cursor.position = r.pod<index_t>();
  c.cursor.consumed = r.pod<index_t>();
  c.cursor.permutation = r.vec<index_t>();
  c.cursor.requeued = r.vec<index_t>();
  if (!r.done()) throw IoError(path + ": checkpoint payload has trailing bytes");
  if (static_cast<index_t>(c.centre.size()) != c.param_count ||
      static_cast<index_t>(c.previous_centre.size()) != c.param_count) {
    throw IoError(path + ": checkpoint centre has " + std::to_string(c.centre.size()) +
                  " floats, header says " + std::to_string(c.param_count));
  }
  return c;
}

}  // namespace hetsgd
