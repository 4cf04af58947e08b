#include "apps/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"

namespace hetsgd::app {

void check_output_path(const std::string& path, const char* what) {
  if (path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw IoError(std::string(what) + " " + path +
                  ": exists and is not a regular file (refusing to replace it)");
  }
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw IoError(std::string(what) + " " + path + ": folder " + parent.string() +
                  " does not exist");
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw IoError(std::string(what) + " " + path + ": folder " + parent.string() +
                  " is not writable");
  }
}

}  // namespace hetsgd::app
