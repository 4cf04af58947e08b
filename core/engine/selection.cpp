#include "core/engine/selection.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"

namespace hetsgd {

ModelSelector::ModelSelector(const TrainOptions& options, TrainState* state)
    : options_(options), state_(state) {}

ModelSelector::~ModelSelector() { remove_file(); }

bool ModelSelector::offer(const std::vector<float>& z, const RankingMetrics& val,
                          const RankingMetrics& test, index_t round, bool last) {
  TrainState& s = *state_;
  if (s.has_best && val.p135() <= s.best_val.p135()) {
    ++s.evals_since_best;
    return false;
  }
  s.has_best = true;
  s.best_val = val;
  s.best_test = test;
  s.best_round = round;
  s.evals_since_best = 0;
  // A copy per improvement: improvements get rarer as training goes, and the copy is what
  // makes the saved model the selected one rather than the last.
  if (options_.keep_best && last) {
    // The centre stays as evaluated until the run returns it: a copy (a model-sized write at
    // 670,091 labels) would only be read back.
    remove_file();
    std::vector<float>().swap(s.best_centre);
  } else if (options_.keep_best) {
    if (options_.best_model_file.empty()) {
      s.best_centre = z;
    } else {
      spill(z);
    }
  }
  return true;
}

bool ModelSelector::out_of_patience() const {
  return options_.patience > 0 && state_->has_best && state_->evals_since_best >= options_.patience;
}

void ModelSelector::adopt_state() {
  if (options_.best_model_file.empty() || state_->best_centre.empty()) return;
  spill(state_->best_centre);
  std::vector<float>().swap(state_->best_centre);
}

bool ModelSelector::has_model() const { return in_file_ || !state_->best_centre.empty(); }

std::vector<float> ModelSelector::copy_model() const {
  return in_file_ ? read_file() : state_->best_centre;
}

std::vector<float> ModelSelector::take_model() {
  if (!in_file_) return std::move(state_->best_centre);
  std::vector<float> z = read_file();
  remove_file();
  return z;
}

void ModelSelector::spill(const std::vector<float>& z) {
  // A scratch file of this run only: no fsync or rename (a crash loses the run anyway), and a
  // failed write stops the run with the error.
  const std::string& path = options_.best_model_file;
  // A later copy of the same size overwrites the file in place: its pages are already in the
  // page cache, and rewriting them took 0.13 s at 670,091 labels (0.83 GB) where truncating
  // and writing anew took 0.6 to 4.5 s (fresh pages).
  const bool in_place = in_file_ && file_floats_ == z.size();
  in_file_ = true;  // from here on the file is ours to remove, whatever happens
  std::ofstream out(path, in_place ? std::ios::binary | std::ios::in | std::ios::out
                                   : std::ios::binary | std::ios::trunc);
  if (!out) throw IoError("cannot write '" + path + "': " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(z.data()),
            static_cast<std::streamsize>(z.size() * sizeof(float)));
  out.close();
  if (!out) throw IoError(path + ": writing the best model failed: " + std::strerror(errno));
  file_floats_ = z.size();
  std::vector<float>().swap(state_->best_centre);
}

StreamedFloats ModelSelector::stream_model() const {
  if (!in_file_) return StreamedFloats::of(state_->best_centre);
  StreamedFloats out;
  out.floats = file_floats_;
  out.stream = [this](const FloatSink& sink) { read_file(sink); };
  return out;
}

std::vector<float> ModelSelector::read_file() const {
  std::vector<float> z(file_floats_);
  std::size_t at = 0;
  read_file([&](const float* p, std::size_t n) {
    std::memcpy(z.data() + at, p, n * sizeof(float));
    at += n;
  });
  return z;
}

void ModelSelector::read_file(const FloatSink& sink) const {
  // Read, not mapped: a mapping's pages would count in the resident set beside the copy.
  const std::string& path = options_.best_model_file;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
  const auto bytes = static_cast<std::size_t>(in.tellg());
  // Written by this process; another size means something else changed the file.
  if (bytes != file_floats_ * sizeof(float)) {
    throw IoError(path + ": the best model's file has " + std::to_string(bytes) + " bytes, " +
                  std::to_string(file_floats_ * sizeof(float)) +
                  " were written (was it changed during the run?)");
  }
  in.seekg(0);
  std::vector<float> piece(std::min<std::size_t>(file_floats_, std::size_t{1} << 20));
  for (std::size_t done = 0; done < file_floats_;) {
    const std::size_t n = std::min(piece.size(), file_floats_ - done);
    in.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(n * sizeof(float)));
    if (!in) throw IoError(path + ": short read of the best model");
    sink(piece.data(), n);
    done += n;
  }
}

void ModelSelector::remove_file() {
  if (!in_file_) return;
  std::remove(options_.best_model_file.c_str());
  in_file_ = false;
}

}  // namespace hetsgd
