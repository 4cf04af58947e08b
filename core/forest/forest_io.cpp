// LabelForest's bytes (core/forest/README.md, "Bytes"): "HFOREST3", int64 num_features,
// num_labels, roots, nodes, centroid entries, leaf entries; int32 roots; per node int32
// first_child, uint32 children, centroid entries, leaf entries (each node's entries follow the
// previous node's); centroid ids and leaf labels as uint16 where every id fits, else int32;
// centroid values and leaf frequencies as binary16; int64 feature weights (0 or
// num_features) and the floats. "HFOREST2" (and "HFOREST1", without feature weights) stored
// every node's ranges as int64 and every entry as 4-byte ids and floats: they are read too.
// The model file's checksum covers them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/byte_cursor.h"
#include "core/error.h"
#include "core/forest/half.h"
#include "core/forest/label_forest.h"
#include "core/resident.h"

namespace hetsgd {
namespace {

constexpr char kForestMagic[8] = {'H', 'F', 'O', 'R', 'E', 'S', 'T', '3'};
constexpr char kWideMagic[8] = {'H', 'F', 'O', 'R', 'E', 'S', 'T', '2'};
constexpr char kUnweightedMagic[8] = {'H', 'F', 'O', 'R', 'E', 'S', 'T', '1'};
constexpr std::size_t kMagicBytes = sizeof kForestMagic;

// Ids below this are stored in 2 bytes.
constexpr std::int64_t kNarrowIds = std::int64_t{1} << 16;

// Fixed-width bytes of a forest with these counts (serialize()'s layout): a forest's size is
// known without writing it, which grow() needs to fit its trees in ForestOptions::max_bytes.
std::int64_t forest_bytes(std::int64_t features, std::int64_t labels, std::int64_t trees,
                          std::int64_t nodes, std::int64_t cents, std::int64_t leaves,
                          std::int64_t weights) {
  const std::int64_t id = features < kNarrowIds ? 2 : 4;
  const std::int64_t label = labels < kNarrowIds ? 2 : 4;
  return static_cast<std::int64_t>(kMagicBytes) + 6 * 8 + trees * 4 + nodes * 16 +
         cents * (id + 2) + leaves * (label + 2) + 8 + weights * 4;
}

// HFOREST3's nodes and entries: each node's counts become its ranges, entries in node order.
// The arrays it fills are the forest's own.
struct ForestArrays {
  std::vector<LabelForest::Node>* nodes;
  std::vector<col_t>* centroid_ids;
  std::vector<float>* centroid_values;
  std::vector<col_t>* leaf_labels;
  std::vector<float>* leaf_weights;
};

void read_compact(ByteCursor* c, std::int64_t nodes, std::int64_t cents, std::int64_t leaves,
                  std::int64_t num_features, std::int64_t num_labels, const ForestArrays& f) {
  using Node = LabelForest::Node;
  std::vector<std::uint32_t> raw;
  c->get_array(&raw, nodes * 4, "nodes");  // int32 first_child, 3 uint32 counts
  resize_resident(f.nodes, static_cast<size_t>(nodes));
  std::int64_t cent = 0, leaf = 0;
  for (std::int64_t i = 0; i < nodes; ++i) {
    const std::uint32_t* r = raw.data() + 4 * i;
    Node& n = (*f.nodes)[static_cast<size_t>(i)];
    // The int32 first_child travels in a uint32 slot: copied as bits, not converted.
    std::memcpy(&n.first_child, r, sizeof n.first_child);
    // Past int32, a count is out of range (the checks below name the node).
    n.children = r[1] > 0x7fffffffu ? -1 : static_cast<std::int32_t>(r[1]);
    n.centroid_begin = cent;
    n.centroid_end = cent += r[2];
    n.leaf_begin = leaf;
    n.leaf_end = leaf += r[3];
  }
  if (cent != cents || leaf != leaves) {
    c->fail("the nodes hold " + std::to_string(cent) + " centroid and " + std::to_string(leaf) +
            " leaf entries, the header says " + std::to_string(cents) + " and " +
            std::to_string(leaves));
  }
  const auto ids = [c](std::vector<col_t>* v, std::int64_t n, bool narrow, const char* what) {
    if (narrow) {
      std::vector<std::uint16_t> small;
      c->get_array(&small, n, what);
      resize_resident(v, small.size());
      std::copy(small.begin(), small.end(), v->begin());
    } else {
      c->get_array(v, n, what);
    }
  };
  const auto halves = [c](std::vector<float>* v, std::int64_t n, const char* what) {
    std::vector<std::uint16_t> bits;
    c->get_array(&bits, n, what);
    resize_resident(v, bits.size());
    for (size_t i = 0; i < bits.size(); ++i) (*v)[i] = from_half(bits[i]);
  };
  ids(f.centroid_ids, cents, num_features < kNarrowIds, "centroid ids");
  halves(f.centroid_values, cents, "centroid values");
  ids(f.leaf_labels, leaves, num_labels < kNarrowIds, "leaf labels");
  halves(f.leaf_weights, leaves, "leaf weights");
}

}  // namespace

std::int64_t LabelForest::bytes() const {
  return forest_bytes(num_features_, num_labels_, trees(), nodes(),
                      static_cast<std::int64_t>(centroid_ids_.size()),
                      static_cast<std::int64_t>(leaf_labels_.size()),
                      static_cast<std::int64_t>(feature_weights_.size()));
}

void LabelForest::serialize(std::string* out) const {
  const std::size_t start = out->size();
  out->append(kForestMagic, kMagicBytes);
  put_bytes(out, static_cast<std::int64_t>(num_features_));
  put_bytes(out, static_cast<std::int64_t>(num_labels_));
  put_bytes(out, static_cast<std::int64_t>(roots_.size()));
  put_bytes(out, static_cast<std::int64_t>(nodes_.size()));
  put_bytes(out, static_cast<std::int64_t>(centroid_ids_.size()));
  put_bytes(out, static_cast<std::int64_t>(leaf_labels_.size()));
  put_array(out, roots_);
  for (const Node& n : nodes_) {
    put_bytes(out, n.first_child);
    put_bytes(out, static_cast<std::uint32_t>(n.children));
    put_bytes(out, static_cast<std::uint32_t>(n.centroid_end - n.centroid_begin));
    put_bytes(out, static_cast<std::uint32_t>(n.leaf_end - n.leaf_begin));
  }
  // Entries in node order, whatever order the builder appended them in.
  const auto ids = [out](const std::vector<col_t>& v, std::int64_t b, std::int64_t e, bool narrow) {
    for (std::int64_t i = b; i < e; ++i) {
      if (narrow) {
        put_bytes(out, static_cast<std::uint16_t>(v[static_cast<size_t>(i)]));
      } else {
        put_bytes(out, static_cast<std::int32_t>(v[static_cast<size_t>(i)]));
      }
    }
  };
  const auto halves = [out](const std::vector<float>& v, std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) put_bytes(out, to_half(v[static_cast<size_t>(i)]));
  };
  for (const Node& n : nodes_)
    ids(centroid_ids_, n.centroid_begin, n.centroid_end, num_features_ < kNarrowIds);
  for (const Node& n : nodes_) halves(centroid_values_, n.centroid_begin, n.centroid_end);
  for (const Node& n : nodes_)
    ids(leaf_labels_, n.leaf_begin, n.leaf_end, num_labels_ < kNarrowIds);
  for (const Node& n : nodes_) halves(leaf_weights_, n.leaf_begin, n.leaf_end);
  put_bytes(out, static_cast<std::int64_t>(feature_weights_.size()));
  put_array(out, feature_weights_);
  // bytes() is what grow() budgets trees by: it must be what is written.
  HETSGD_CHECK(
      static_cast<std::int64_t>(out->size() - start) == bytes(),
      "forest serialize: " << out->size() - start << " bytes written, " << bytes() << " expected");
}

LabelForest LabelForest::parse(std::string_view bytes, index_t num_features, index_t num_labels,
                               const std::string& name) {
  const auto is = [&bytes](const char* magic) {
    return bytes.size() >= kMagicBytes && std::memcmp(bytes.data(), magic, kMagicBytes) == 0;
  };
  const bool compact = is(kForestMagic);
  const bool weighted = compact || is(kWideMagic);
  if (!weighted && !is(kUnweightedMagic)) {
    throw IoError(name +
                  ": forest section: magic 'HFOREST3' (or 'HFOREST2', 'HFOREST1') not found");
  }
  ByteCursor c(bytes.substr(kMagicBytes), name, "forest");
  LabelForest f;
  f.num_features_ = c.get<std::int64_t>("num_features");
  f.num_labels_ = c.get<std::int64_t>("num_labels");
  if (f.num_features_ != num_features || f.num_labels_ != num_labels) {
    c.fail("shape " + std::to_string(f.num_features_) + " x " + std::to_string(f.num_labels_) +
           ", the model's is " + std::to_string(num_features) + " x " + std::to_string(num_labels));
  }
  const auto roots = c.get<std::int64_t>("roots");
  const auto nodes = c.get<std::int64_t>("nodes");
  const auto cents = c.get<std::int64_t>("centroid entries");
  const auto leaves = c.get<std::int64_t>("leaf entries");
  if (roots < 1 || nodes < roots || nodes > (std::int64_t{1} << 31) - 1) {
    c.fail(std::to_string(roots) + " trees and " + std::to_string(nodes) +
           " nodes: expected 1 <= trees <= nodes < 2^31");
  }
  c.get_array(&f.roots_, roots, "roots");
  if (compact) {
    read_compact(
        &c, nodes, cents, leaves, num_features, num_labels,
        {&f.nodes_, &f.centroid_ids_, &f.centroid_values_, &f.leaf_labels_, &f.leaf_weights_});
  } else {
    std::vector<std::int64_t> raw;
    c.get_array(&raw, nodes * 5, "nodes");  // 2 int32 + 4 int64 = 5 int64 slots
    resize_resident(&f.nodes_, static_cast<size_t>(nodes));
    std::memcpy(static_cast<void*>(f.nodes_.data()), raw.data(), raw.size() * sizeof(std::int64_t));
    static_assert(sizeof(Node) == 5 * sizeof(std::int64_t), "Node is stored as its bytes");
    c.get_array(&f.centroid_ids_, cents, "centroid ids");
    c.get_array(&f.centroid_values_, cents, "centroid values");
    c.get_array(&f.leaf_labels_, leaves, "leaf labels");
    c.get_array(&f.leaf_weights_, leaves, "leaf weights");
  }
  // HFOREST1 predates the idf weights: its forest keeps none and scores the rows as they are.
  if (weighted) {
    const auto count = c.get<std::int64_t>("feature weight count");
    if (count != 0 && count != num_features) {
      c.fail("feature weight count " + std::to_string(count) + ", expected 0 or " +
             std::to_string(num_features));
    }
    c.get_array(&f.feature_weights_, count, "feature weights");
    for (float v : f.feature_weights_) {
      // Written as a negation so that a NaN, for which every comparison is false, fails too.
      if (!(std::isfinite(v) && v >= 0.0f)) c.fail("a feature weight is negative or not finite");
    }
  }
  // Bytes left over mean that a count disagrees with what was written: refused, not skipped.
  if (c.pos() + kMagicBytes != bytes.size()) {
    c.fail(std::to_string(bytes.size() - kMagicBytes - c.pos()) + " bytes after the last array");
  }
  for (std::int32_t r : f.roots_) {
    if (r < 0 || r >= nodes) c.fail("root " + std::to_string(r) + " outside the nodes");
  }
  const auto in_range = [](std::int64_t b, std::int64_t e, std::int64_t n) {
    return b >= 0 && b <= e && e <= n;
  };
  for (std::int64_t i = 0; i < nodes; ++i) {
    const Node& n = f.nodes_[static_cast<size_t>(i)];
    // Children come after their parent: descending always ends.
    if (n.children < 0 ||
        (n.children > 0 && (n.first_child <= i || n.first_child > nodes - n.children)) ||
        !in_range(n.centroid_begin, n.centroid_end, cents) ||
        !in_range(n.leaf_begin, n.leaf_end, leaves)) {
      c.fail("node " + std::to_string(i) + " has a child or range outside the section");
    }
  }
  // Every node hangs from exactly one parent or is exactly one tree's root: the trees are
  // proper trees sharing no node, so scoring a row visits at most every node once (children
  // come after their parent, so there is no cycle). The range checks below allow shared
  // children: a chain reached from many roots or parents would pass them and make a row's
  // descent cost roots x depth. Linear: the first node counted twice fails.
  std::vector<std::uint8_t> reached(static_cast<size_t>(nodes), 0);
  for (std::size_t t = 0; t < f.roots_.size(); ++t) {
    if (reached[static_cast<size_t>(f.roots_[t])]++ != 0) {
      c.fail("node " + std::to_string(f.roots_[t]) + " is the root of tree " + std::to_string(t) +
             " and of an earlier tree: trees must not share nodes");
    }
  }
  for (std::int64_t i = 0; i < nodes; ++i) {
    const Node& n = f.nodes_[static_cast<size_t>(i)];
    for (std::int64_t ch = n.first_child; ch < std::int64_t{n.first_child} + n.children; ++ch) {
      if (reached[static_cast<size_t>(ch)]++ != 0) {
        c.fail("node " + std::to_string(ch) + " is a child of node " + std::to_string(i) +
               " and is also reached from another node or root: not a tree");
      }
    }
  }
  for (std::int64_t i = 0; i < nodes; ++i) {
    if (reached[static_cast<size_t>(i)] == 0) {
      c.fail("node " + std::to_string(i) + " is reached from no root (" + std::to_string(nodes) +
             " nodes, " + std::to_string(roots) + " trees)");
    }
  }
  for (std::size_t e = 0; e < f.centroid_ids_.size(); ++e) {
    if (f.centroid_ids_[e] < 0 || f.centroid_ids_[e] >= num_features ||
        !std::isfinite(f.centroid_values_[e])) {
      c.fail("centroid entry " + std::to_string(e) + " (feature " +
             std::to_string(f.centroid_ids_[e]) + ") outside [0, " + std::to_string(num_features) +
             ") or not finite");
    }
  }
  for (std::size_t e = 0; e < f.leaf_labels_.size(); ++e) {
    if (f.leaf_labels_[e] < 0 || f.leaf_labels_[e] >= num_labels ||
        !(f.leaf_weights_[e] >= 0.0f && f.leaf_weights_[e] <= 1.0f)) {
      c.fail("leaf entry " + std::to_string(e) + " (label " + std::to_string(f.leaf_labels_[e]) +
             ") outside [0, " + std::to_string(num_labels) + ") or weight outside [0, 1]");
    }
  }
  return f;
}

}  // namespace hetsgd
