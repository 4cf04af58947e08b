/// \file tests/unit/mirrored_cluster.h
/// A two-rank Cluster faked on one process: the other rank mirrors this one, so every sum over
/// ranks doubles, and its allgather and gather_to_root contribution is `peer` (e.g. another
/// rank's offer key).
/// Records the size of every float all-reduce and counts the allgathers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/cluster.h"

namespace hetsgd::test {

class MirroredTwoRanks final : public Cluster {
 public:
  /// `peer`: what the other rank contributes to allgather() (empty by default).
  explicit MirroredTwoRanks(std::string peer = std::string()) : peer_(std::move(peer)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* name() const override { return "mirrored"; }
  void allreduce_sum(float* data, index_t n) override {
    float_sums.push_back(n);
    for (index_t k = 0; k < n; ++k) data[k] *= 2.0f;
  }
  void allreduce_sum(double* data, index_t n) override {
    for (index_t k = 0; k < n; ++k) data[k] *= 2.0;
  }
  void allreduce_sum(std::int64_t* data, index_t n) override {
    for (index_t k = 0; k < n; ++k) data[k] *= 2;
  }
  void allreduce_max(std::int64_t*, index_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::string> allgather(const std::string& mine) override {
    ++allgathers;
    return {mine, peer_};
  }
  std::vector<std::string> gather_to_root(const std::string& mine) override {
    return {mine, peer_};
  }
  void barrier() override {}
  std::int64_t fetch_add(SharedCounter, std::int64_t) override { return 0; }

  std::vector<index_t> float_sums;  ///< n of every float all-reduce, in order
  int allgathers = 0;

 private:
  std::string peer_;
};

}  // namespace hetsgd::test
