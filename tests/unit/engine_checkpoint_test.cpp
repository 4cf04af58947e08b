#include "core/engine/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/checksum.h"
#include "core/error.h"
#include "tests/common/thrown.h"

namespace hetsgd {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "engine_ckpt_" + std::to_string(::getpid()) + "_" + name;
}

TrainState sample_state() {
  TrainState c;
  c.options_text = "algo=adaptive lr0=0.001";
  c.param_count = 5;
  c.centre = {1, 2, 3, 4, 5};
  c.previous_centre = {0, 1, 2, 3, 4};
  SlotState a;
  a.device = "cpu:0";
  a.batch_size = 384;
  a.throughput = 3000.5;
  a.updates = 40;
  a.samples = 9000;
  a.optimizer.first = {0.5f, 0.25f, 0, 0, 1};
  a.optimizer.second = {1, 1, 2, 2, 3};
  a.optimizer.steps = 40;
  SlotState b;
  b.device = "cpu:1@0.33";
  b.alive = false;
  b.failure = "injected fault";
  b.batch_size = 128;
  b.throughput = 1000.25;
  b.replica = {5, 4, 3, 2, 1};
  c.slots = {a, b};
  c.past_warmup = true;
  c.round = 17;
  c.train_seconds = 12.5;
  c.eval_seconds = 1.25;
  c.evaluations = 9;
  c.best_p1 = 0.61;
  c.time_to_target_s = -1.0;
  c.target_reached = false;
  c.loss_since_eval = 3.5;
  c.points_since_eval = 700;
  c.cursor = BatchSource(10, 3).state();
  c.cursor.position = 4;
  c.cursor.consumed = 24;
  c.cursor.epoch = 2;
  c.cursor.requeued = {7, 1};
  return c;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(EngineCheckpoint, RoundTripsEveryField) {
  const std::string path = temp_path("roundtrip");
  const TrainState c = sample_state();
  save_checkpoint(path, c);
  const TrainState d = load_checkpoint(path);
  EXPECT_EQ(d.options_text, c.options_text);
  EXPECT_EQ(d.centre, c.centre);
  EXPECT_EQ(d.previous_centre, c.previous_centre);
  ASSERT_EQ(d.slots.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(d.slots[i].device, c.slots[i].device);
    EXPECT_EQ(d.slots[i].alive, c.slots[i].alive);
    EXPECT_EQ(d.slots[i].failure, c.slots[i].failure);
    EXPECT_EQ(d.slots[i].batch_size, c.slots[i].batch_size);
    EXPECT_EQ(d.slots[i].throughput, c.slots[i].throughput);
    EXPECT_EQ(d.slots[i].updates, c.slots[i].updates);
    EXPECT_EQ(d.slots[i].samples, c.slots[i].samples);
    EXPECT_EQ(d.slots[i].optimizer.first, c.slots[i].optimizer.first);
    EXPECT_EQ(d.slots[i].optimizer.second, c.slots[i].optimizer.second);
    EXPECT_EQ(d.slots[i].optimizer.steps, c.slots[i].optimizer.steps);
    EXPECT_EQ(d.slots[i].replica, c.slots[i].replica);
  }
  EXPECT_EQ(d.past_warmup, c.past_warmup);
  EXPECT_EQ(d.evaluations, c.evaluations);
  EXPECT_EQ(d.loss_since_eval, c.loss_since_eval);
  EXPECT_EQ(d.points_since_eval, c.points_since_eval);
  EXPECT_EQ(d.round, c.round);
  EXPECT_EQ(d.train_seconds, c.train_seconds);
  EXPECT_EQ(d.best_p1, c.best_p1);
  EXPECT_EQ(d.cursor.permutation, c.cursor.permutation);
  EXPECT_EQ(d.cursor.requeued, c.cursor.requeued);
  EXPECT_EQ(d.cursor.epoch, 2);
  EXPECT_EQ(d.cursor.position, 4);
  EXPECT_EQ(d.cursor.consumed, 24);
  std::remove(path.c_str());
}

TEST(EngineCheckpoint, DetectsCorruptionTruncationAndForeignFiles) {
  const std::string path = temp_path("corrupt");
  save_checkpoint(path, sample_state());
  const std::vector<char> good = read_all(path);

  std::vector<char> flipped = good;
  flipped[good.size() - 9] ^= 0x10;  // inside the payload
  write_all(path, flipped);
  const std::string flip = test::thrown_message<IoError>([&] { load_checkpoint(path); },
                                                         "a flipped payload bit was not detected");
  EXPECT_NE(flip.find("checksum"), std::string::npos) << flip;
  EXPECT_NE(flip.find(path), std::string::npos) << flip;

  write_all(path, std::vector<char>(good.begin(), good.end() - 3));
  EXPECT_THROW(load_checkpoint(path), IoError);

  std::vector<char> foreign = good;
  foreign[0] = 'X';
  write_all(path, foreign);
  EXPECT_THROW(load_checkpoint(path), IoError);

  std::vector<char> future = good;
  future[8] = 99;  // version field
  write_all(path, future);
  const std::string version = test::thrown_message<IoError>([&] { load_checkpoint(path); },
                                                            "an unknown version was accepted");
  EXPECT_NE(version.find("version 99"), std::string::npos) << version;
  EXPECT_THROW(load_checkpoint(path + ".missing"), IoError);
  std::remove(path.c_str());
}

TEST(EngineCheckpoint, SaveReplacesAtomicallyAndLeavesNoTemporaryFile) {
  const std::string path = temp_path("atomic");
  TrainState c = sample_state();
  save_checkpoint(path, c);
  c.round = 18;
  save_checkpoint(path, c);
  EXPECT_EQ(load_checkpoint(path).round, 18);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  EXPECT_NE(::access(tmp.c_str(), F_OK), 0) << "temporary file left behind";
  std::remove(path.c_str());
}

// Content behind a valid checksum is still checked: every field that indexes or sizes
// something is validated before it is used, and the message names the file and the field.
TEST(EngineCheckpoint, RefusesFieldsOutOfRangeBehindAValidChecksum) {
  const std::string path = temp_path("fields");
  struct Case {
    const char* name;
    void (*spoil)(TrainState*);
    const char* field;
  };
  const Case cases[] = {
      {"permutation entry out of range", [](TrainState* s) { s->cursor.permutation[3] = 99; },
       "cursor permutation[3]"},
      {"permutation repeats a point",
       [](TrainState* s) { s->cursor.permutation[1] = s->cursor.permutation[0]; },
       "cursor permutation[1]"},
      {"position past N", [](TrainState* s) { s->cursor.position = 11; }, "cursor position"},
      {"negative consumed", [](TrainState* s) { s->cursor.consumed = -1; }, "cursor consumed"},
      {"consumed beyond what the cursor drew", [](TrainState* s) { s->cursor.consumed = 1000000; },
       "cursor consumed"},
      {"cursor far beyond the data", [](TrainState* s) { s->cursor.epoch = index_t{1} << 40; },
       "cursor epoch"},
      {"negative slot rank", [](TrainState* s) { s->slots[1].rank = -1; }, "rank"},
      {"requeued id out of range", [](TrainState* s) { s->cursor.requeued[0] = 10; },
       "cursor requeued[0]"},
      {"batch size 0", [](TrainState* s) { s->slots[0].batch_size = 0; }, "batch size"},
      {"batch size beyond N", [](TrainState* s) { s->slots[0].batch_size = 1 << 30; },
       "batch size"},
      {"negative round", [](TrainState* s) { s->round = -5; }, "round"},
      {"NaN centre", [](TrainState* s) { s->centre[2] = std::nanf(""); }, "centre"},
      {"Inf optimiser moment", [](TrainState* s) { s->slots[0].optimizer.second[0] = 1.0f / 0.0f; },
       "optimiser second moment"},
      {"short optimiser buffer", [](TrainState* s) { s->slots[0].optimizer.first.pop_back(); },
       "optimiser first moment"},
      {"negative optimiser steps", [](TrainState* s) { s->slots[0].optimizer.steps = -1; },
       "optimiser steps"},
      {"NaN throughput", [](TrainState* s) { s->slots[1].throughput = std::nan(""); },
       "throughput"},
      {"negative training time", [](TrainState* s) { s->train_seconds = -3; }, "training seconds"},
  };
  for (const Case& c : cases) {
    TrainState s = sample_state();
    c.spoil(&s);
    save_checkpoint(path, s);
    try {
      load_checkpoint(path);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << c.name << ": " << what;
      EXPECT_NE(what.find(c.field), std::string::npos) << c.name << ": " << what;
    }
  }
  std::remove(path.c_str());
}

// A length field corrupted together with a recomputed checksum (what a crafted file does)
// must not allocate beyond the file: the reader checks lengths against the bytes left.
TEST(EngineCheckpoint, RefusesLengthsBeyondThePayload) {
  const std::string path = temp_path("lengths");
  save_checkpoint(path, sample_state());
  std::vector<char> bytes = read_all(path);
  // The options string's length is the payload's first field, right after the 28-byte header.
  const std::uint64_t huge = std::uint64_t{1} << 60;
  std::memcpy(bytes.data() + 28, &huge, sizeof huge);
  const std::uint64_t sum = checksum64(bytes.data() + 28, bytes.size() - 28);
  std::memcpy(bytes.data() + 20, &sum, sizeof sum);
  write_all(path, bytes);
  try {
    load_checkpoint(path);
    FAIL() << "a huge length was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("options"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetsgd
