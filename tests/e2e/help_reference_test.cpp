// apps/README.md's option reference against the binary's --help: every option a subcommand's
// --help lists is documented in its section, every option the section names exists, and the
// defaults of `train`'s tables are the ones --help prints. An option added to the command line
// without its line in the README fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/cli_run.h"

namespace hetsgd::test {
namespace {

const std::string kReadme = std::string(HETSGD_TEST_DATA_DIR) + "/../../apps/README.md";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "--[no-]keep-best" is two names; "--lr" one.
std::vector<std::string> expand(const std::string& name) {
  const std::string negatable = "--[no-]";
  if (name.rfind(negatable, 0) != 0) return {name};
  const std::string base = name.substr(negatable.size());
  return {"--" + base, "--no-" + base};
}

// The long option names in `text`, in order of appearance.
std::vector<std::string> names_in(const std::string& text) {
  static const std::regex name(R"(--(\[no-\])?[a-z0-9]+(-[a-z0-9]+)*)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    for (const std::string& n : expand(it->str())) out.push_back(n);
  }
  return out;
}

// The contents of the inline code spans of `text` (fenced blocks left out: examples).
std::vector<std::string> code_spans(const std::string& text) {
  std::string prose;
  bool fenced = false;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) prose += line + "\n";
  }
  std::vector<std::string> spans;
  for (std::size_t at = prose.find('`'); at != std::string::npos;) {
    const std::size_t end = prose.find('`', at + 1);
    if (end == std::string::npos) break;
    spans.push_back(prose.substr(at + 1, end - at - 1));
    at = prose.find('`', end + 1);
  }
  return spans;
}

// From the heading "## `title`" to the next "## ".
std::string section(const std::string& readme, const std::string& title) {
  const std::string heading = "\n## " + title + "\n";
  const std::size_t begin = readme.find(heading);
  if (begin == std::string::npos) return "";
  const std::size_t end = readme.find("\n## ", begin + heading.size());
  return readme.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::set<std::string> documented(const std::string& text) {
  std::set<std::string> out;
  for (const std::string& span : code_spans(text)) {
    for (const std::string& n : names_in(span)) out.insert(n);
  }
  return out;
}

// Option name -> the default --help prints ("" when it prints none). CLI11 prints "  NAMES
// TYPE=DEFAULT" padded to column 30 and the description after it, or on the next line (indented
// by 30) when the names and type are longer.
std::map<std::string, std::string> help_options(const std::string& command) {
  const CliRun r = run_cli(command + " --help");
  EXPECT_EQ(r.code, 0) << command << " --help:\n" << r.out;
  const std::vector<std::string> lines = lines_of(r.out);
  const std::string indent(30, ' ');
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("  -", 0) != 0) continue;
    const bool alone = i + 1 < lines.size() && lines[i + 1].rfind(indent, 0) == 0;
    const std::string spec = trim(alone ? line.substr(2) : line.substr(2, 28));
    const std::string names = spec.substr(0, spec.find_first_of(" ="));
    const std::size_t eq = spec.rfind('=');
    const std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
    std::stringstream split(names);
    for (std::string name; std::getline(split, name, ',');) {
      if (name.rfind("--", 0) != 0 || name == "--help") continue;
      for (const std::string& n : expand(name)) out[n] = value;
    }
  }
  EXPECT_FALSE(out.empty()) << command << " --help listed no option:\n" << r.out;
  return out;
}

// Spellings the README names as still accepted but no longer listed by --help.
std::set<std::string> former_spellings(const std::string& readme) {
  const std::size_t at = readme.find("The former spellings");
  if (at == std::string::npos) return {};
  return documented(readme.substr(at, readme.find("\n- ", at) - at));
}

// Both directions for one subcommand; `also`: options documented elsewhere for every
// subcommand (Conventions); `elsewhere`: options of another command the section may name.
void expect_same_names(const std::map<std::string, std::string>& help,
                       const std::set<std::string>& readme, const std::set<std::string>& former,
                       const std::set<std::string>& also, const std::string& what,
                       const std::map<std::string, std::string>& elsewhere = {}) {
  for (const auto& [name, value] : help) {
    EXPECT_TRUE(readme.count(name) > 0 || also.count(name) > 0)
        << what << ": " << name << " is in --help but not in apps/README.md";
  }
  for (const std::string& name : readme) {
    EXPECT_TRUE(help.count(name) > 0 || former.count(name) > 0 || elsewhere.count(name) > 0)
        << what << ": apps/README.md names " << name << ", which --help does not list";
  }
}

bool same_value(const std::string& readme, const std::string& help) {
  if (readme == help) return true;
  char* end_r = nullptr;
  char* end_h = nullptr;
  const double r = std::strtod(readme.c_str(), &end_r);
  const double h = std::strtod(help.c_str(), &end_h);
  return !readme.empty() && !help.empty() && *end_r == '\0' && *end_h == '\0' && r == h;
}

// A table row's default cell for its i-th of n options: "8, 16, 16" holds one each, "128"
// (`--batch`, `--b0`: one option, two names) one for all; the text before " (" only.
std::string default_for(std::string cell, std::size_t i, std::size_t n) {
  cell.erase(std::remove(cell.begin(), cell.end(), '`'), cell.end());
  cell = trim(cell.substr(0, cell.find(" (")));
  std::vector<std::string> parts;
  std::stringstream split(cell);
  for (std::string p; std::getline(split, p, ',');) parts.push_back(trim(p));
  return parts.size() == n ? parts[i] : cell;
}

TEST(CliHelpReference, TrainOptionsAndDefaultsMatchTheReadme) {
  const std::string readme = read_text(kReadme);
  ASSERT_FALSE(readme.empty()) << kReadme;
  const std::string text = section(readme, "hetsgd train");
  ASSERT_FALSE(text.empty()) << "no '## hetsgd train' in " << kReadme;
  const std::map<std::string, std::string> help = help_options("train");
  expect_same_names(help, documented(text), former_spellings(readme), {}, "train");

  int compared = 0;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("| `-", 0) != 0) continue;
    // | options | default | meaning |: the first two cells hold no '|'.
    const std::size_t sep = line.find('|', 1);
    const std::size_t sep2 = line.find('|', sep + 1);
    ASSERT_NE(sep2, std::string::npos) << line;
    const std::vector<std::string> spans = code_spans(line.substr(1, sep - 1));
    const std::string cell = line.substr(sep + 1, sep2 - sep - 1);
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const std::string readme_default = default_for(cell, i, spans.size());
      for (const std::string& name : names_in(spans[i])) {
        const auto it = help.find(name);
        if (readme_default.empty() || it == help.end() || it->second.empty()) continue;
        EXPECT_TRUE(same_value(readme_default, it->second))
            << name << ": apps/README.md says the default is '" << readme_default
            << "', --help prints '" << it->second << "'";
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 50) << "the train tables' defaults were not found";
}

// The other subcommands' references are prose: names only. --quiet and --json are in the
// Conventions for every subcommand.
TEST(CliHelpReference, OtherSubcommandsOptionsMatchTheReadme) {
  const std::string readme = read_text(kReadme);
  ASSERT_FALSE(readme.empty()) << kReadme;
  const std::set<std::string> former = former_spellings(readme);
  const std::set<std::string> conventions = {"--quiet", "--json"};
  // A share jobs file's job options are train's (`"epochs": 5` is `--epochs=5`).
  const std::map<std::string, std::string> train = help_options("train");
  for (const std::string cmd : {"eval", "predict", "share"}) {
    const std::string text = section(readme, "hetsgd " + cmd);
    ASSERT_FALSE(text.empty()) << "no '## hetsgd " << cmd << "' in " << kReadme;
    expect_same_names(help_options(cmd), documented(text), former, conventions, cmd,
                      cmd == "share" ? train : std::map<std::string, std::string>{});
  }
  // data: one section for gen, convert and stats.
  std::map<std::string, std::string> data;
  for (const std::string sub : {"gen", "convert", "stats"}) {
    for (const auto& kv : help_options("data " + sub)) data.insert(kv);
  }
  expect_same_names(data, documented(section(readme, "hetsgd data")), former, conventions, "data");
}

}  // namespace
}  // namespace hetsgd::test
