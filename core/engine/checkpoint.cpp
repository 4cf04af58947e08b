// Writing checkpoints: the payload as pieces streamed to an atomic file (see checkpoint.h).
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
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

// The payload as a list of pieces: small fields are copied; vectors are referenced (the
// TrainState outlives the write) and the buffers of CheckpointSources are streamed from their
// owners, so a checkpoint writes the model-sized buffers to the file without a second copy
// of them in memory. Size and checksum are summed as the pieces go out.
class Writer {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    own(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) {
      const char* data = reinterpret_cast<const char*>(v.data());
      const std::size_t bytes = v.size() * sizeof(T);
      pieces_.push_back({{}, [data, bytes](const ByteSink& sink) { sink(data, bytes); }});
    }
  }
  /// `floats` floats that `stream` hands out at write time (a length, then the floats).
  void streamed(std::uint64_t floats, std::function<void(const FloatSink&)> stream) {
    pod(floats);
    if (floats == 0) return;
    pieces_.push_back({{}, [floats, stream = std::move(stream)](const ByteSink& sink) {
                         std::uint64_t seen = 0;
                         stream([&](const float* p, std::size_t n) {
                           seen += n;
                           HETSGD_CHECK(seen <= floats, "checkpoint: a buffer streamed more than "
                                                            << floats << " floats");
                           sink(p, n * sizeof(float));
                         });
                         HETSGD_CHECK(seen == floats, "checkpoint: a buffer streamed "
                                                          << seen << " of " << floats << " floats");
                       }});
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    own(s.data(), s.size());
  }
  void flag(bool b) { pod(static_cast<std::uint8_t>(b ? 1 : 0)); }
  // The field lists of checkpoint_format.h: the name is the reader's.
  template <class T>
  void field(const T& v, const char*) {
    pod(v);
  }
  template <class T>
  void field(const std::vector<T>& v, const char*) {
    vec(v);
  }
  void field(const std::string& s, const char*) { str(s); }
  void field(bool b, const char*) { flag(b); }

  /// Streams the payload into `sink`; sets its size and checksum.
  void write(const ByteSink& sink, std::uint64_t* size, std::uint64_t* checksum) const {
    Checksum64 sum;
    std::uint64_t n = 0;
    const ByteSink counted = [&](const void* data, std::size_t bytes) {
      sum.update(data, bytes);
      n += bytes;
      sink(data, bytes);
    };
    for (const Piece& p : pieces_) {
      if (p.stream) {
        p.stream(counted);
      } else {
        counted(p.copied.data(), p.copied.size());
      }
    }
    *size = n;
    *checksum = sum.finish();
  }

 private:
  struct Piece {
    std::string copied;                           // small fields, in order
    std::function<void(const ByteSink&)> stream;  // or a buffer's bytes
  };
  void own(const char* p, std::size_t n) {
    if (pieces_.empty() || pieces_.back().stream) pieces_.emplace_back();
    pieces_.back().copied.append(p, n);
  }
  std::vector<Piece> pieces_;
};

// The state's own buffer, or the source's when it streams one.
void buffer(Writer& w, const std::vector<float>& own, const StreamedFloats& source) {
  if (source.stream) {
    w.streamed(source.floats, source.stream);
  } else {
    w.vec(own);
  }
}

void write_slot(Writer& w, const SlotState& s, const SlotSources* source) {
  w.str(s.device);
  w.pod(static_cast<std::int32_t>(s.rank));
  w.flag(s.alive);
  w.str(s.failure);
  w.pod(s.batch_size);
  w.pod(s.throughput);
  w.pod(s.updates);
  w.pod(s.samples);
  if (source != nullptr && source->optimizer.stream) {
    const OptimizerStream& o = source->optimizer;
    w.streamed(static_cast<std::uint64_t>(o.first), [o](const FloatSink& f) { o.stream(0, f); });
    w.streamed(static_cast<std::uint64_t>(o.second), [o](const FloatSink& f) { o.stream(1, f); });
    w.pod(o.steps);
  } else {
    w.vec(s.optimizer.first);
    w.vec(s.optimizer.second);
    w.pod(s.optimizer.steps);
  }
  buffer(w, s.replica, source != nullptr ? source->replica : StreamedFloats{});
}

}  // namespace

StreamedFloats StreamedFloats::of(const std::vector<float>& v) {
  StreamedFloats out;
  out.floats = v.size();
  const float* data = v.data();
  const std::size_t n = v.size();
  out.stream = [data, n](const FloatSink& sink) {
    if (n > 0) sink(data, n);
  };
  return out;
}

void save_checkpoint(const std::string& path, const TrainState& s) {
  save_checkpoint(path, s, CheckpointSources{});
}

void save_checkpoint(const std::string& path, const TrainState& s, const CheckpointSources& src) {
  HETSGD_CHECK(!path.empty(), "save_checkpoint: empty path");
  HETSGD_CHECK(src.slots.empty() || src.slots.size() == s.slots.size(),
               "save_checkpoint: " << src.slots.size() << " slot sources for " << s.slots.size()
                                   << " slots");
  Writer w;
  checkpoint_format::head_fields(w, s);
  buffer(w, s.centre, src.centre);
  buffer(w, s.previous_centre, src.previous_centre);
  checkpoint_format::cursor_fields(w, s);
  w.pod(static_cast<std::uint64_t>(s.slots.size()));
  for (std::size_t i = 0; i < s.slots.size(); ++i) {
    write_slot(w, s.slots[i], src.slots.empty() ? nullptr : &src.slots[i]);
  }
  checkpoint_format::progress_fields(w, s);
  buffer(w, s.best_centre, src.best_centre);
  buffer(w, s.average, src.average);
  // One pass: the header's size and checksum are written over its place once the payload
  // has gone out (streamed buffers are read once).
  std::uint64_t size = 0, sum = 0;
  write_file_atomic(
      path, kHeaderBytes, [&](const ByteSink& sink) { w.write(sink, &size, &sum); },
      [&] {
        std::string head(kMagic, sizeof kMagic);
        head.append(reinterpret_cast<const char*>(&kCheckpointVersion), sizeof kCheckpointVersion);
        head.append(reinterpret_cast<const char*>(&size), sizeof size);
        head.append(reinterpret_cast<const char*>(&sum), sizeof sum);
        return head;
      });
}

std::string encode_slots(const std::vector<SlotState>& slots) {
  Writer w;
  w.pod(static_cast<std::uint64_t>(slots.size()));
  for (const SlotState& slot : slots) write_slot(w, slot, nullptr);
  std::string out;
  std::uint64_t size = 0, sum = 0;
  w.write([&](const void* data,
              std::size_t bytes) { out.append(static_cast<const char*>(data), bytes); },
          &size, &sum);
  return out;
}

std::string model_shape_text(const ModelConfig& config) {
  std::string out;
  for (index_t w : config.widths()) out += (out.empty() ? "" : "-") + std::to_string(w);
  return out;
}

}  // namespace hetsgd
