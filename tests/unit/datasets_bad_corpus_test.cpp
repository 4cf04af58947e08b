// The malformed-input corpus in tests/data/bad: every file is listed in expected.tsv with the
// reader it is given to and the pieces its error message must contain; every case is refused
// with a hetsgd error naming the file. The binary cases (caches and models whose content is
// wrong behind a valid checksum, or whose header is damaged) are built here from a good file
// by a named recipe, so the checked-in bytes can be reproduced: HETSGD_WRITE_BAD_CORPUS=1
// rewrites them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "core/model/model_io.h"
#include "datasets/binary_cache.h"
#include "datasets/load.h"
#include "datasets/xc_format.h"
#include "tests/common/paths.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd {
namespace {

namespace fs = std::filesystem;

using test::read_file_bytes;

template <class T>
void poke(std::string* b, std::size_t offset, T v) {
  std::memcpy(&(*b)[offset], &v, sizeof v);
}

// Recomputes the trailing checksum, so that only the content is wrong.
void reseal(std::string* b) {
  const std::uint64_t sum = checksum64(b->data(), b->size() - 8);
  poke(b, b->size() - 8, sum);
}

// The cache of good/tiny_xc.txt: 4 rows, 6 features, 3 labels, nnz 7, label_nnz 5. Offsets:
// header 0, x_indptr 64, y_indptr 104, x_indices 144, x_values 172, y_indices 200, padding 220,
// checksum 224.
std::string good_cache() {
  const std::string path = test::temp_path("hetsgd_bad_corpus_", ".bin").string();
  datasets::save_cache(datasets::read_xc(test::data_path("good/tiny_xc.txt")), path);
  std::string b = read_file_bytes(path);
  fs::remove(path);
  return b;
}

// A 6-feature, 3-label model with one hidden layer of 3: 33 parameters at byte 56, checksum
// at 188.
std::string good_model() {
  SavedModel m;
  m.config.num_features = 6;
  m.config.num_labels = 3;
  m.config.hidden = {3};
  for (int k = 0; k < 33; ++k) m.params.push_back(0.01f * static_cast<float>(k - 16));
  const std::string path = test::temp_path("hetsgd_bad_corpus_", ".model").string();
  save_model(path, m);
  std::string b = read_file_bytes(path);
  fs::remove(path);
  return b;
}

using Recipe = std::function<std::string()>;

// The file `good` makes, changed by `edit`, its checksum then recomputed unless `seal` is false
// (the cases about the checksum itself).
Recipe edited(std::string (*good)(), std::function<void(std::string*)> edit, bool seal) {
  return [good, edit = std::move(edit), seal] {
    std::string b = good();
    edit(&b);
    if (seal) reseal(&b);
    return b;
  };
}

std::map<std::string, Recipe> binary_recipes() {
  const auto cache = [](std::function<void(std::string*)> edit, bool seal = true) {
    return edited(good_cache, std::move(edit), seal);
  };
  const auto model = [](std::function<void(std::string*)> edit, bool seal = true) {
    return edited(good_model, std::move(edit), seal);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::map<std::string, Recipe> r;
  // Caches: content behind a valid checksum.
  r["cache_offset_past_nnz.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 80, 100); });
  r["cache_offsets_decreasing.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 80, 1); });
  r["cache_first_offset_nonzero.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 64, 1); });
  r["cache_last_offset_short.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 96, 6); });
  r["cache_label_offset_past_nnz.bin"] =
      cache([](std::string* b) { poke<std::int64_t>(b, 112, 9); });
  r["cache_feature_out_of_range.bin"] =
      cache([](std::string* b) { poke<std::int32_t>(b, 144, 6); });
  r["cache_negative_feature.bin"] = cache([](std::string* b) { poke<std::int32_t>(b, 144, -1); });
  r["cache_label_out_of_range.bin"] = cache([](std::string* b) { poke<std::int32_t>(b, 200, 3); });
  r["cache_negative_label.bin"] = cache([](std::string* b) { poke<std::int32_t>(b, 200, -5); });
  r["cache_unsorted_features.bin"] = cache([](std::string* b) {
    poke<std::int32_t>(b, 144, 3);
    poke<std::int32_t>(b, 148, 0);
  });
  r["cache_duplicate_feature.bin"] = cache([](std::string* b) { poke<std::int32_t>(b, 148, 0); });
  r["cache_duplicate_label.bin"] = cache([](std::string* b) { poke<std::int32_t>(b, 204, 0); });
  r["cache_nan_value.bin"] = cache([nan](std::string* b) { poke<float>(b, 176, nan); });
  r["cache_inf_value.bin"] = cache([inf](std::string* b) { poke<float>(b, 172, -inf); });
  r["cache_negative_rows.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 16, -1); });
  r["cache_rows_overflow.bin"] =
      cache([](std::string* b) { poke<std::int64_t>(b, 16, std::int64_t{1} << 62); });
  r["cache_huge_num_labels.bin"] =
      cache([](std::string* b) { poke<std::int64_t>(b, 32, std::int64_t{1} << 40); });
  r["cache_negative_num_features.bin"] =
      cache([](std::string* b) { poke<std::int64_t>(b, 24, -6); });
  r["cache_zero_num_features.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 24, 0); });
  r["cache_nnz_mismatch.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 40, 9); });
  r["cache_reserved_nonzero.bin"] = cache([](std::string* b) { poke<std::int64_t>(b, 56, 1); });
  r["cache_padding_nonzero.bin"] = cache([](std::string* b) { (*b)[221] = 'x'; });
  r["cache_wrong_version.bin"] = cache([](std::string* b) { poke<std::uint32_t>(b, 8, 2); });
  r["cache_byte_order.bin"] =
      cache([](std::string* b) { poke<std::uint32_t>(b, 12, 0x04030201u); });
  r["cache_bad_checksum.bin"] = cache([](std::string* b) { (*b)[150] ^= 0x01; }, false);
  r["cache_truncated.bin"] = cache([](std::string* b) { b->resize(150); }, false);
  r["cache_trailing_garbage.bin"] = cache([](std::string* b) { *b += "garbage!"; }, false);
  // Models: header fields range-checked before any size is computed, then content.
  r["model_nan_param.model"] = model([nan](std::string* b) { poke<float>(b, 60, nan); });
  r["model_inf_param.model"] = model([inf](std::string* b) { poke<float>(b, 184, inf); });
  r["model_flipped_hidden.model"] = model([](std::string* b) { (*b)[45] ^= 0x01; },
                                          false);  // bit 40 of hidden[0], checksum stale
  r["model_huge_features.model"] =
      model([](std::string* b) { poke<std::int64_t>(b, 16, std::int64_t{1} << 62); });
  r["model_zero_labels.model"] = model([](std::string* b) { poke<std::int64_t>(b, 24, 0); });
  r["model_hidden_count.model"] = model([](std::string* b) { poke<std::int64_t>(b, 32, 1000000); });
  r["model_zero_hidden_width.model"] = model([](std::string* b) { poke<std::int64_t>(b, 40, 0); });
  r["model_param_count.model"] = model([](std::string* b) { poke<std::int64_t>(b, 48, 34); });
  r["model_layout_too_big.model"] = model([](std::string* b) {
    poke<std::int64_t>(b, 16, std::int64_t{1} << 31);
    poke<std::int64_t>(b, 40, std::int64_t{1} << 20);
  });
  r["model_truncated.model"] = model([](std::string* b) { b->resize(120); }, false);
  r["model_bad_checksum.model"] = model([](std::string* b) { (*b)[100] ^= 0x40; }, false);
  r["model_wrong_version.model"] = model([](std::string* b) { poke<std::uint32_t>(b, 8, 9); });
  r["model_bad_loss.model"] = model([](std::string* b) { poke<std::uint32_t>(b, 12, 7); });
  r["model_wrong_magic.model"] = model([](std::string* b) { (*b)[0] = 'X'; });
  r["model_as_data.model"] = [] { return good_model(); };
  return r;
}

TEST(DatasetsBadCorpus, TableListsEveryFileAndAtLeastSixtyCases) {
  const std::vector<test::BadCorpusCase> cases = test::bad_corpus_cases();
  EXPECT_GE(cases.size(), 60u);
  std::set<std::string> listed;
  for (const test::BadCorpusCase& c : cases) {
    EXPECT_TRUE(listed.insert(c.file).second) << c.file << " listed twice";
    EXPECT_TRUE(c.reader == "data" || c.reader == "model") << c.file << ": reader " << c.reader;
    EXPECT_TRUE(fs::exists(test::data_path("bad/" + c.file))) << c.file << " is missing";
  }
  for (const auto& e : fs::directory_iterator(test::data_path("bad"))) {
    const std::string name = e.path().filename().string();
    if (name == "expected.tsv") continue;
    EXPECT_EQ(listed.count(name), 1u) << name << " has no row in expected.tsv";
  }
}

TEST(DatasetsBadCorpus, BinaryCasesAreReproducedByTheirRecipes) {
  const bool write = std::getenv("HETSGD_WRITE_BAD_CORPUS") != nullptr;
  for (const auto& [name, recipe] : binary_recipes()) {
    const std::string path = test::data_path("bad/" + name);
    const std::string bytes = recipe();
    if (write) std::ofstream(path, std::ios::binary) << bytes;
    EXPECT_EQ(read_file_bytes(path), bytes) << name << " differs from its recipe";
  }
}

TEST(DatasetsBadCorpus, EveryCaseIsRefusedWithItsMessage) {
  for (const test::BadCorpusCase& c : test::bad_corpus_cases()) {
    const std::string path = test::data_path("bad/" + c.file);
    std::string message;
    try {
      if (c.reader == "model") {
        load_model(path);
      } else {
        datasets::load_dataset(path);
      }
    } catch (const Error& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.file << ": not a hetsgd error: " << e.what();
      continue;
    }
    if (message.empty()) {
      ADD_FAILURE() << c.file << " was accepted";
      continue;
    }
    EXPECT_NE(message.find(c.file), std::string::npos) << c.file << ": " << message;
    for (const std::string& piece : c.pieces) {
      EXPECT_NE(message.find(piece), std::string::npos)
          << c.file << ": message\n  " << message << "\nlacks\n  " << piece;
    }
  }
}

}  // namespace
}  // namespace hetsgd
