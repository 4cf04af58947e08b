#include "core/checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/checksum.h"
#include "core/error.h"

namespace hetsgd {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "engine_ckpt_" + std::to_string(::getpid()) + "_" + name;
}

TrainCheckpoint sample_checkpoint() {
  TrainCheckpoint c;
  c.algo = "adaptive";
  c.options_text = "algo=adaptive lr0=0.001";
  c.options_fingerprint = checksum64(c.options_text.data(), c.options_text.size());
  c.param_count = 5;
  c.centre = {1, 2, 3, 4, 5};
  c.previous_centre = {0, 1, 2, 3, 4};
  c.batch_sizes = {384, 128};
  c.throughput = {3000.5, 1000.25};
  c.alive = {1, 0};
  c.past_warmup = true;
  c.round = 17;
  c.train_seconds = 12.5;
  c.eval_seconds = 1.25;
  c.evaluations = 9;
  c.best_p1 = 0.61;
  c.time_to_target_s = -1.0;
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
  const TrainCheckpoint c = sample_checkpoint();
  save_checkpoint(path, c);
  const TrainCheckpoint d = load_checkpoint(path);
  EXPECT_EQ(d.algo, c.algo);
  EXPECT_EQ(d.options_text, c.options_text);
  EXPECT_EQ(d.options_fingerprint, c.options_fingerprint);
  EXPECT_EQ(d.centre, c.centre);
  EXPECT_EQ(d.previous_centre, c.previous_centre);
  EXPECT_EQ(d.batch_sizes, c.batch_sizes);
  EXPECT_EQ(d.throughput, c.throughput);
  EXPECT_EQ(d.alive, c.alive);
  EXPECT_EQ(d.past_warmup, c.past_warmup);
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
  save_checkpoint(path, sample_checkpoint());
  const std::vector<char> good = read_all(path);

  std::vector<char> flipped = good;
  flipped[good.size() - 9] ^= 0x10;  // inside the payload
  write_all(path, flipped);
  try {
    load_checkpoint(path);
    FAIL() << "a flipped payload bit was not detected";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }

  write_all(path, std::vector<char>(good.begin(), good.end() - 3));
  EXPECT_THROW(load_checkpoint(path), IoError);

  std::vector<char> foreign = good;
  foreign[0] = 'X';
  write_all(path, foreign);
  EXPECT_THROW(load_checkpoint(path), IoError);

  std::vector<char> future = good;
  future[8] = 99;  // version field
  write_all(path, future);
  try {
    load_checkpoint(path);
    FAIL() << "an unknown version was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("version 99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_checkpoint(path + ".missing"), IoError);
  std::remove(path.c_str());
}

TEST(EngineCheckpoint, SaveReplacesAtomicallyAndLeavesNoTemporaryFile) {
  const std::string path = temp_path("atomic");
  TrainCheckpoint c = sample_checkpoint();
  save_checkpoint(path, c);
  c.round = 18;
  save_checkpoint(path, c);
  EXPECT_EQ(load_checkpoint(path).round, 18);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  EXPECT_NE(::access(tmp.c_str(), F_OK), 0) << "temporary file left behind";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetsgd
