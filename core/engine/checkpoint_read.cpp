// Reading checkpoints: the header, a bounds-checked decoder of the payload, and the checks of
// every field before a state is used (see checkpoint.h).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "core/engine/checkpoint.h"
#include "core/engine/checkpoint_format.h"
#include "core/error.h"
#include "core/file_io.h"

namespace hetsgd {
namespace {

using checkpoint_format::kHeaderBytes;
using checkpoint_format::kMagic;

// Every length is checked against the bytes that are left before anything is allocated, so a
// corrupted length can never ask for more memory than the file holds.
class Reader {
 public:
  Reader(const char* data, std::size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}
  template <class T>
  T pod(const char* field) {
    T v;
    need(sizeof(T), field);
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> vec(const char* field) {
    const auto n = pod<std::uint64_t>(field);
    if (n > (size_ - pos_) / sizeof(T)) {
      fail(field, "length " + std::to_string(n) + " runs past the end of the payload");
    }
    std::vector<T> v(static_cast<std::size_t>(n));
    // An empty vector's data() may be null, and memcpy from/to null is undefined even for 0.
    if (n > 0) std::memcpy(v.data(), data_ + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }
  std::string str(const char* field) {
    const auto n = pod<std::uint64_t>(field);
    need(n, field);
    std::string s(data_ + pos_, static_cast<std::size_t>(n));
    pos_ += n;
    return s;
  }
  bool flag(const char* field) {
    const auto b = pod<std::uint8_t>(field);
    if (b > 1) fail(field, "flag byte " + std::to_string(b) + " is neither 0 nor 1");
    return b == 1;
  }
  // The field lists of checkpoint_format.h: each field read as the type it is stored in.
  template <class T>
  void field(T& v, const char* name) {
    v = pod<T>(name);
  }
  template <class T>
  void field(std::vector<T>& v, const char* name) {
    v = vec<T>(name);
  }
  void field(std::string& s, const char* name) { s = str(name); }
  void field(bool& b, const char* name) { b = flag(name); }
  bool done() const { return pos_ == size_; }
  [[noreturn]] void fail(const char* field, const std::string& what) const {
    throw IoError(path_ + ": corrupted checkpoint: " + field + ": " + what);
  }

 private:
  void need(std::uint64_t n, const char* field) const {
    if (n > size_ - pos_) {
      fail(field, "needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                      " of " + std::to_string(size_));
    }
  }
  const char* data_;
  std::size_t size_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

SlotState read_slot(Reader& r) {
  SlotState s;
  s.device = r.str("slot device");
  s.rank = r.pod<std::int32_t>("slot rank");
  s.alive = r.flag("slot alive");
  s.failure = r.str("slot failure");
  s.batch_size = r.pod<index_t>("slot batch size");
  s.throughput = r.pod<double>("slot throughput");
  s.updates = r.pod<index_t>("slot updates");
  s.samples = r.pod<index_t>("slot samples");
  s.optimizer.first = r.vec<float>("slot optimiser first moment");
  s.optimizer.second = r.vec<float>("slot optimiser second moment");
  s.optimizer.steps = r.pod<std::int64_t>("slot optimiser steps");
  s.replica = r.vec<float>("slot replica");
  return s;
}

// Larger than any batch a run can use (b_max is range-checked far below it), small enough that
// a corrupted size fails here rather than in an allocation.
constexpr index_t kMaxSavedBatch = index_t{1} << 24;
// Far more epochs than any run trains, small enough that epoch x N stays far from overflowing.
constexpr index_t kMaxSavedEpochs = index_t{1} << 24;

std::string index_text(std::size_t i) { return "[" + std::to_string(i) + "]"; }

// Throws IoError "<what>: <field>: <problem>".
struct Validator {
  const std::string& what;
  void check(bool ok, const std::string& field, const std::string& problem) const {
    if (!ok) throw IoError(what + ": " + field + ": " + problem);
  }
  void finite_buffer(const std::vector<float>& v, const std::string& field) const {
    for (std::size_t i = 0; i < v.size(); ++i) {
      check(std::isfinite(v[i]), field, "entry " + std::to_string(i) + " is not finite");
    }
  }
  void sized(const std::vector<float>& v, index_t n, const std::string& field,
             bool optional) const {
    const bool ok = static_cast<index_t>(v.size()) == n || (optional && v.empty());
    check(ok, field,
          std::to_string(v.size()) + " floats, the model has " + std::to_string(n) + " parameters");
    finite_buffer(v, field);
  }
  void non_negative_finite(double v, const std::string& field) const {
    check(std::isfinite(v) && v >= 0.0, field, std::to_string(v) + " is not a finite value >= 0");
  }
};

}  // namespace

void validate_train_state(const TrainState& s, const std::string& what) {
  const Validator v{what};
  v.check(s.param_count >= 1, "param_count", std::to_string(s.param_count) + " < 1");
  v.sized(s.centre, s.param_count, "centre", false);
  v.sized(s.previous_centre, s.param_count, "previous centre", true);  // empty: Z_prev = Z
  const BatchSourceState& c = s.cursor;
  v.check(c.num_points >= 1, "cursor points", std::to_string(c.num_points) + " < 1");
  v.check(static_cast<index_t>(c.permutation.size()) == c.num_points, "cursor permutation",
          std::to_string(c.permutation.size()) + " entries for " + std::to_string(c.num_points) +
              " points");
  std::vector<char> seen(static_cast<std::size_t>(c.num_points), 0);
  for (std::size_t i = 0; i < c.permutation.size(); ++i) {
    const index_t p = c.permutation[i];
    v.check(p >= 0 && p < c.num_points, "cursor permutation" + index_text(i),
            std::to_string(p) + " outside [0, " + std::to_string(c.num_points) + ")");
    v.check(seen[static_cast<std::size_t>(p)] == 0, "cursor permutation" + index_text(i),
            "point " + std::to_string(p) + " appears twice (not a permutation)");
    seen[static_cast<std::size_t>(p)] = 1;
  }
  v.check(c.position >= 0 && c.position <= c.num_points, "cursor position",
          std::to_string(c.position) + " outside [0, " + std::to_string(c.num_points) + "]");
  v.check(c.epoch >= 0, "cursor epoch", std::to_string(c.epoch) + " < 0");
  v.check(c.consumed >= 0, "cursor consumed", std::to_string(c.consumed) + " < 0");
  // A cursor can neither have consumed more than it drew nor be so far on that its position
  // in the stream of epochs overflows.
  v.check(c.epoch <= kMaxSavedEpochs, "cursor epoch",
          std::to_string(c.epoch) + " beyond " + std::to_string(kMaxSavedEpochs) + " epochs");
  const index_t drawn = c.epoch * c.num_points + c.position;
  v.check(c.consumed <= drawn, "cursor consumed",
          std::to_string(c.consumed) + " points, more than the " + std::to_string(drawn) +
              " it drew (epoch " + std::to_string(c.epoch) + " of " + std::to_string(c.num_points) +
              " points, position " + std::to_string(c.position) + ")");
  for (std::size_t i = 0; i < c.requeued.size(); ++i) {
    v.check(c.requeued[i] >= 0 && c.requeued[i] < c.num_points, "cursor requeued" + index_text(i),
            std::to_string(c.requeued[i]) + " outside [0, " + std::to_string(c.num_points) + ")");
  }
  v.check(s.round >= 0, "round", std::to_string(s.round) + " < 0");
  v.check(s.evaluations >= 0, "evaluations", std::to_string(s.evaluations) + " < 0");
  v.check(s.points_since_eval >= 0, "points since evaluation",
          std::to_string(s.points_since_eval) + " < 0");
  v.non_negative_finite(s.train_seconds, "training seconds");
  v.non_negative_finite(s.eval_seconds, "evaluation seconds");
  v.non_negative_finite(s.loss_since_eval, "loss since evaluation");
  v.check(std::isfinite(s.best_p1) && s.best_p1 >= 0.0 && s.best_p1 <= 1.0, "best P@1",
          std::to_string(s.best_p1) + " outside [0, 1]");
  v.check(std::isfinite(s.time_to_target_s) && s.time_to_target_s >= -1.0, "time to target",
          std::to_string(s.time_to_target_s) + " is not -1 or a time");
  v.sized(s.best_centre, s.param_count, "best centre", true);
  v.sized(s.average, s.param_count, "average", true);
  v.check(s.best_round >= 0 && s.best_round <= s.round, "best round",
          std::to_string(s.best_round) + " outside [0, round " + std::to_string(s.round) + "]");
  v.check(s.evals_since_best >= 0, "evaluations since best",
          std::to_string(s.evals_since_best) + " < 0");
  for (const RankingMetrics* m : {&s.best_val, &s.best_test}) {
    for (int k = 1; k <= 5; ++k) {
      v.check(std::isfinite(m->p_at(k)) && m->p_at(k) >= 0.0 && m->p_at(k) <= 1.0,
              m == &s.best_val ? "best validation metrics" : "best test metrics",
              "P@" + std::to_string(k) + " outside [0, 1]");
    }
  }
  for (std::size_t i = 0; i < s.slots.size(); ++i) {
    const SlotState& slot = s.slots[i];
    const std::string f = "slot" + index_text(i) + " (" + slot.device + ") ";
    v.check(!slot.device.empty(), f + "device", "empty device id");
    v.check(slot.rank >= 0, f + "rank", std::to_string(slot.rank) + " < 0");
    v.check(
        slot.batch_size >= 1 && slot.batch_size <= kMaxSavedBatch, f + "batch size",
        std::to_string(slot.batch_size) + " outside [1, " + std::to_string(kMaxSavedBatch) + "]");
    v.non_negative_finite(slot.throughput, f + "throughput");
    v.check(slot.updates >= 0 && slot.samples >= 0, f + "totals", "negative counter");
    v.check(slot.optimizer.steps >= 0, f + "optimiser steps",
            std::to_string(slot.optimizer.steps) + " < 0");
    v.sized(slot.optimizer.first, s.param_count, f + "optimiser first moment", true);
    v.sized(slot.optimizer.second, s.param_count, f + "optimiser second moment", true);
    v.sized(slot.replica, s.param_count, f + "replica", true);
  }
}

TrainState load_checkpoint(const std::string& path) {
  const MappedFile file(path);
  const char* data = file.data();
  if (file.size() < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    throw IoError(path + ": not a hetsgd checkpoint (bad magic)");
  }
  if (file.size() < kHeaderBytes) throw IoError(path + ": truncated checkpoint header");
  std::uint32_t version = 0;
  std::uint64_t size = 0, sum = 0;
  std::memcpy(&version, data + 8, sizeof version);
  std::memcpy(&size, data + 12, sizeof size);
  std::memcpy(&sum, data + 20, sizeof sum);
  if (version != kCheckpointVersion) {
    throw IoError(path + ": checkpoint format version " + std::to_string(version) +
                  " is not supported (this build reads version " +
                  std::to_string(kCheckpointVersion) + ")");
  }
  if (size != file.size() - kHeaderBytes) {
    throw IoError(path + ": checkpoint is " + std::to_string(file.size()) + " bytes, header says " +
                  std::to_string(kHeaderBytes) + " + " + std::to_string(size) +
                  " (truncated or extended)");
  }
  const char* payload = data + kHeaderBytes;
  if (checksum64(payload, static_cast<std::size_t>(size)) != sum) {
    throw IoError(path + ": checkpoint checksum mismatch (file corrupted)");
  }
  Reader r(payload, static_cast<std::size_t>(size), path);
  TrainState s;
  checkpoint_format::head_fields(r, s);
  s.centre = r.vec<float>("centre");
  s.previous_centre = r.vec<float>("previous centre");
  checkpoint_format::cursor_fields(r, s);
  const auto slots = r.pod<std::uint64_t>("slot count");
  // A slot takes at least 8 length fields: a count beyond that bound cannot be real.
  if (slots > static_cast<std::uint64_t>(size) / 64) {
    r.fail("slot count", std::to_string(slots) + " slots cannot fit the payload");
  }
  for (std::uint64_t i = 0; i < slots; ++i) s.slots.push_back(read_slot(r));
  checkpoint_format::progress_fields(r, s);
  s.best_centre = r.vec<float>("best centre");
  s.average = r.vec<float>("average");
  if (!r.done()) throw IoError(path + ": checkpoint payload has trailing bytes");
  validate_train_state(s, path + ": corrupted checkpoint");
  return s;
}

std::vector<SlotState> decode_slots(const std::string& bytes, const std::string& what) {
  Reader r(bytes.data(), bytes.size(), what);
  const auto n = r.pod<std::uint64_t>("slot count");
  if (n > bytes.size() / 64) r.fail("slot count", std::to_string(n) + " slots cannot fit");
  std::vector<SlotState> out;
  for (std::uint64_t i = 0; i < n; ++i) out.push_back(read_slot(r));
  if (!r.done()) throw IoError(what + ": trailing bytes after the slots");
  return out;
}

}  // namespace hetsgd
