// How load_dataset chooses a text file's format: announced, forced by --format, and refused
// when a file without XC header fits both readings of a feature space fixed elsewhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/load.h"
#include "tests/common/scratch_dir.h"

namespace hetsgd::datasets {
namespace {

struct Notes {
  std::vector<std::string> messages;
  std::vector<bool> guessed;
};

class DatasetsFormatChoice : public hetsgd::test::ScratchTest {
 protected:
  DatasetsFormatChoice() : ScratchTest("hetsgd_format_choice_", /*per_test=*/false) {}
  FormatChoice recording(Notes* notes) const {
    FormatChoice c;
    c.notice = [notes](const std::string& m, bool g) {
      notes->messages.push_back(m);
      notes->guessed.push_back(g);
    };
    return c;
  }
};

// The XC lines of a 3-row file whose header was lost: ids are 0-based, 6 features.
constexpr const char* kHeaderless = "0,2 1:1 3:0.5\n1 2:1\n2 4:3 5:1.5\n";

TEST_F(DatasetsFormatChoice, EveryChoiceIsAnnouncedAndAGuessSaysHowToOverrideIt) {
  Notes notes;
  const std::string xc = write("a.txt", std::string("3 6 3\n") + kHeaderless);
  const Dataset d = load_dataset(xc, {}, recording(&notes));
  EXPECT_EQ(d.num_features, 6);
  ASSERT_EQ(notes.messages.size(), 1u);
  EXPECT_FALSE(notes.guessed[0]);
  EXPECT_NE(notes.messages[0].find("XC format"), std::string::npos) << notes.messages[0];

  // A training file without header: LIBSVM is a guess, and the notice says how to overrule it.
  const std::string bare = write("b.txt", kHeaderless);
  DataFormat chosen = DataFormat::kXc;
  const Dataset l = load_dataset(bare, {}, recording(&notes), &chosen);
  EXPECT_EQ(chosen, DataFormat::kLibsvm);
  EXPECT_EQ(l.num_features, 5);  // 1-based: ids 1..5 are columns 0..4
  ASSERT_EQ(notes.messages.size(), 2u);
  EXPECT_TRUE(notes.guessed[1]);
  EXPECT_NE(notes.messages[1].find("--format=xc"), std::string::npos) << notes.messages[1];
}

TEST_F(DatasetsFormatChoice, FormatXcReadsLinesWithoutHeaderZeroBased) {
  Notes notes;
  FormatChoice c = recording(&notes);
  c.forced = DataFormat::kXc;
  const std::string bare = write("b.txt", kHeaderless);
  const Dataset d = load_dataset(bare, {6, 3}, c);
  EXPECT_EQ(d.num_features, 6);
  EXPECT_EQ(d.num_labels, 3);
  EXPECT_EQ(d.x_indices, (std::vector<col_t>{1, 3, 2, 4, 5}));
  // With no hint the shape is inferred from the highest ids.
  const Dataset inferred = load_dataset(bare, {}, c);
  EXPECT_EQ(inferred.num_features, 6);
  // --format=libsvm reads the same lines 1-based, without asking.
  c.forced = DataFormat::kLibsvm;
  EXPECT_EQ(load_dataset(bare, {6, 3}, c).x_indices, (std::vector<col_t>{0, 2, 1, 3, 4}));
  EXPECT_EQ(parse_format("cache"), DataFormat::kCache);
  EXPECT_THROW(parse_format("csv"), InvalidArgument);
}

TEST_F(DatasetsFormatChoice, AHeaderlessFileAgainstAFixedFeatureSpaceIsAmbiguous) {
  const std::string bare = write("q.txt", kHeaderless);
  try {
    load_dataset(bare, {6, 3});
    FAIL() << "an ambiguous file was read";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("q.txt"), std::string::npos) << m;
    EXPECT_NE(m.find("ambiguous"), std::string::npos) << m;
    EXPECT_NE(m.find("--format=libsvm or --format=xc"), std::string::npos) << m;
  }
  // Beside a LIBSVM training set it is LIBSVM like it.
  FormatChoice beside;
  beside.companion = DataFormat::kLibsvm;
  EXPECT_EQ(load_dataset(bare, {6, 3}, beside).num_features, 6);
  // Its highest id equal to the width proves 1-based ids: no question asked.
  EXPECT_EQ(load_dataset(bare, {5, 3}).num_features, 5);
}

}  // namespace
}  // namespace hetsgd::datasets
