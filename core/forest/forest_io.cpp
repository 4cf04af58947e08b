// LabelForest's bytes: "HFOREST2", int64 num_features, num_labels, roots, nodes, centroid
// entries, leaf entries; then int32 roots; per node int32 first_child, int32 children, int64
// centroid_begin, centroid_end, leaf_begin, leaf_end; int32 centroid ids, float centroid
// values, int32 leaf labels, float leaf weights; int64 feature weights (0 or num_features) and
// the floats. "HFOREST1" is the same without the feature weights. The model file's checksum
// covers them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/forest/label_forest.h"

namespace hetsgd {
namespace {

constexpr char kForestMagic[8] = {'H', 'F', 'O', 'R', 'E', 'S', 'T', '2'};
constexpr char kUnweightedMagic[8] = {'H', 'F', 'O', 'R', 'E', 'S', 'T', '1'};

template <class T>
void put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
void put_array(std::string* out, const std::vector<T>& v) {
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  template <class T>
  void get_array(std::vector<T>* v, std::int64_t n, const char* field) {
    const std::size_t need = static_cast<std::size_t>(n) * sizeof(T);
    if (n < 0 || static_cast<std::size_t>(n) > bytes_.size() || pos_ + need > bytes_.size()) {
      throw IoError(name_ + ": forest section: " + field + " needs " + std::to_string(n) +
                    " entries past byte " + std::to_string(pos_) + ", the section has " +
                    std::to_string(bytes_.size()) + " bytes");
    }
    v->resize(static_cast<std::size_t>(n));
    if (need > 0) std::memcpy(v->data(), bytes_.data() + pos_, need);
    pos_ += need;
  }
  template <class T>
  T get(const char* field) {
    std::vector<T> one;
    get_array(&one, 1, field);
    return one[0];
  }
  std::size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(name_ + ": forest section: " + what);
  }

 private:
  std::string_view bytes_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

}  // namespace

void LabelForest::serialize(std::string* out) const {
  out->append(kForestMagic, sizeof kForestMagic);
  put(out, static_cast<std::int64_t>(num_features_));
  put(out, static_cast<std::int64_t>(num_labels_));
  put(out, static_cast<std::int64_t>(roots_.size()));
  put(out, static_cast<std::int64_t>(nodes_.size()));
  put(out, static_cast<std::int64_t>(centroid_ids_.size()));
  put(out, static_cast<std::int64_t>(leaf_labels_.size()));
  put_array(out, roots_);
  for (const Node& n : nodes_) {
    put(out, n.first_child);
    put(out, n.children);
    put(out, n.centroid_begin);
    put(out, n.centroid_end);
    put(out, n.leaf_begin);
    put(out, n.leaf_end);
  }
  put_array(out, centroid_ids_);
  put_array(out, centroid_values_);
  put_array(out, leaf_labels_);
  put_array(out, leaf_weights_);
  put(out, static_cast<std::int64_t>(feature_weights_.size()));
  put_array(out, feature_weights_);
}

LabelForest LabelForest::parse(std::string_view bytes, index_t num_features, index_t num_labels,
                               const std::string& name) {
  const bool weighted = bytes.size() >= sizeof kForestMagic &&
                        std::memcmp(bytes.data(), kForestMagic, sizeof kForestMagic) == 0;
  if (!weighted && (bytes.size() < sizeof kForestMagic ||
                    std::memcmp(bytes.data(), kUnweightedMagic, sizeof kForestMagic) != 0)) {
    throw IoError(name + ": forest section: magic 'HFOREST2' (or 'HFOREST1') not found");
  }
  Cursor c(bytes.substr(sizeof kForestMagic), name);
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
  std::vector<std::int64_t> raw;
  c.get_array(&raw, nodes * 5, "nodes");  // 2 int32 + 4 int64 = 5 int64 slots
  f.nodes_.resize(static_cast<size_t>(nodes));
  std::memcpy(static_cast<void*>(f.nodes_.data()), raw.data(), raw.size() * sizeof(std::int64_t));
  static_assert(sizeof(Node) == 5 * sizeof(std::int64_t), "Node is stored as its bytes");
  c.get_array(&f.centroid_ids_, cents, "centroid ids");
  c.get_array(&f.centroid_values_, cents, "centroid values");
  c.get_array(&f.leaf_labels_, leaves, "leaf labels");
  c.get_array(&f.leaf_weights_, leaves, "leaf weights");
  if (weighted) {
    const auto count = c.get<std::int64_t>("feature weight count");
    if (count != 0 && count != num_features) {
      c.fail("feature weight count " + std::to_string(count) + ", expected 0 or " +
             std::to_string(num_features));
    }
    c.get_array(&f.feature_weights_, count, "feature weights");
    for (float v : f.feature_weights_) {
      if (!(std::isfinite(v) && v >= 0.0f)) c.fail("a feature weight is negative or not finite");
    }
  }
  if (c.pos() + sizeof kForestMagic != bytes.size()) {
    c.fail(std::to_string(bytes.size() - sizeof kForestMagic - c.pos()) +
           " bytes after the last array");
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
