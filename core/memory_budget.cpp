#include "core/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

namespace hetsgd {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// MemAvailable counts reclaimable page cache too, unlike free pages, so it is the kernel's
// own estimate of what can be allocated without swapping.
std::uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<std::uint64_t>(pages) * page;
  return kUnlimited;
}

// A container's limit is invisible in /proc/meminfo; cgroup v2 shows it as memory.max.
std::uint64_t cgroup_available() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max");
  std::string max_text;
  if (!(max_file >> max_text) || max_text == "max") return kUnlimited;
  std::uint64_t current = 0;
  std::ifstream("/sys/fs/cgroup/memory.current") >> current;
  const std::uint64_t limit = std::strtoull(max_text.c_str(), nullptr, 10);
  return limit > current ? limit - current : 0;
}

std::uint64_t rlimit_available() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<std::uint64_t>(rl.rlim_cur);
}

std::uint64_t env_limit() {
  const char* env = std::getenv("HETSGD_MEMORY_LIMIT");
  if (env == nullptr || *env == '\0') return kUnlimited;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (end == env || !(v >= 0)) return kUnlimited;
  double scale = 1;
  switch (*end) {
    case 'K':
    case 'k':
      scale = 1024.0;
      break;
    case 'M':
    case 'm':
      scale = 1024.0 * 1024;
      break;
    case 'G':
    case 'g':
      scale = 1024.0 * 1024 * 1024;
      break;
    case 'T':
    case 't':
      scale = 1024.0 * 1024 * 1024 * 1024;
      break;
    default:
      break;
  }
  const double bytes = v * scale;
  return bytes >= 1.8e19 ? kUnlimited : static_cast<std::uint64_t>(bytes);
}

}  // namespace

std::uint64_t available_memory_bytes() {
  return std::min({meminfo_available(), cgroup_available(), rlimit_available(), env_limit()});
}

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kUnlimited : r;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kUnlimited : r;
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  if (bytes == kUnlimited) return "more than 16 EiB";
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  }
  return buf;
}

void check_memory(std::uint64_t estimate_bytes, const std::string& what) {
  const std::uint64_t available = available_memory_bytes();
  if (estimate_bytes <= available) return;
  throw MemoryBudgetExceeded(what + " needs about " + format_bytes(estimate_bytes) + " (" +
                             std::to_string(estimate_bytes) + " bytes) but only " +
                             format_bytes(available) + " (" + std::to_string(available) +
                             " bytes) are available");
}

}  // namespace hetsgd
