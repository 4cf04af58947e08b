#include "apps/config_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace hetsgd::app {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool valid_key(const std::string& k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

std::string subcommand_names(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands({})) {
    out += (out.empty() ? "" : ", ") + sub->get_name();
  }
  return out;
}

}  // namespace

std::string config_path_from_args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
    if (a == "--config" && i + 1 < argc) return argv[i + 1];
  }
  return "";
}

void check_config_file(const std::string& path, CLI::App& app) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InvalidArgument(path + ": config file not found");
  if (!S_ISREG(st.st_mode)) {
    throw InvalidArgument(path + ": config file is not a regular file (a FIFO, device or folder)");
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxConfigBytes) {
    throw InvalidArgument(path + ": config file is " + std::to_string(st.st_size) +
                          " bytes, more than the " + std::to_string(kMaxConfigBytes) + " allowed");
  }
  std::ifstream in(path);
  if (!in) throw InvalidArgument(path + ": cannot read the config file");
  CLI::App* section = nullptr;
  std::string section_name;
  // A repeated section or key would silently drop one of the two: refused, naming both lines.
  std::map<std::string, int> section_lines;
  std::map<std::string, int> key_lines;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n) + ": ";
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[') {
      if (t.back() != ']') throw InvalidArgument(where + "malformed section header '" + t + "'");
      std::stringstream names(trim(t.substr(1, t.size() - 2)));
      std::string name;
      CLI::App* at = &app;
      while (std::getline(names, name, '.')) {
        CLI::App* sub = nullptr;
        try {
          sub = at->get_subcommand(trim(name));
        } catch (const CLI::OptionNotFound&) {
          sub = nullptr;
        }
        if (sub == nullptr) {
          throw InvalidArgument(where + "unknown section [" + t.substr(1, t.size() - 2) +
                                "] (sections are subcommands: " + subcommand_names(*at) + ")");
        }
        at = sub;
      }
      section = at;
      section_name = trim(t.substr(1, t.size() - 2));
      const auto [seen, fresh] = section_lines.emplace(section_name, n);
      if (!fresh) {
        throw InvalidArgument(where + "section [" + section_name + "] again (first at line " +
                              std::to_string(seen->second) + "); put its options under one [" +
                              section_name + "]");
      }
      continue;
    }
    const auto eq = t.find('=');
    if (eq == std::string::npos) {
      throw InvalidArgument(where + "expected 'key = value' or a [section], got '" + t + "'");
    }
    const std::string key = trim(t.substr(0, eq));
    const std::string value = trim(t.substr(eq + 1));
    if (!valid_key(key)) throw InvalidArgument(where + "malformed key '" + key + "'");
    if (value.empty()) throw InvalidArgument(where + "'" + key + "' has no value");
    if (section == nullptr) {
      throw InvalidArgument(where + "'" + key +
                            "' is outside a section; put it under [train], [compare], ...");
    }
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const auto [seen, fresh] = key_lines.emplace(section_name + " " + flag, n);
    if (!fresh) {
      throw InvalidArgument(where + "'" + key + "' again in [" + section_name +
                            "] (first at line " + std::to_string(seen->second) + ")");
    }
    if (section->get_option_no_throw(flag) == nullptr) {
      throw InvalidArgument(where + "unknown option '" + key + "' for [" + section->get_name() +
                            "] (see hetsgd " + section->get_name() + " --help)");
    }
  }
}

}  // namespace hetsgd::app
