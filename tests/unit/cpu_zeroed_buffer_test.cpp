// kernels/cpu/zeroed_buffer.h: fresh buffers read as zeros, fill_zeros writes zeros and stops
// when asked, and the spans it makes resident are advised to transparent huge pages.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "kernels/cpu/zeroed_buffer.h"

namespace hetsgd::cpu {
namespace {

constexpr std::size_t kFloats = std::size_t{24} << 20;  // 96 MiB: several 2 MiB pages, 2 blocks

TEST(ZeroedBuffer, FreshBufferAndFillAreZeros) {
  ZeroedFloats v = zeros(kFloats);
  ASSERT_EQ(v.size(), kFloats);
  for (std::size_t i = 0; i < kFloats; i += 4099) ASSERT_EQ(v[i], 0.0f) << i;
  v[7] = 3.0f;
  v[kFloats - 1] = -1.0f;
  fill_zeros(v.data(), v.size(), nullptr, "test buffer");
  EXPECT_EQ(v[7], 0.0f);
  EXPECT_EQ(v[kFloats - 1], 0.0f);
}

TEST(ZeroedBuffer, FillStopsWhenAsked) {
  ZeroedFloats v = zeros(kFloats);
  std::atomic<bool> stop{true};
  try {
    fill_zeros(v.data(), v.size(), &stop, "test buffer");
    FAIL() << "fill_zeros ignored the stop flag";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test buffer: interrupted"), std::string::npos)
        << e.what();
  }
}

#if defined(__linux__)
// The kernel's THP mode ("always [madvise] never"): advice is honoured unless it is "never".
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  const auto a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

// VmFlags of the mapping of /proc/self/smaps that contains `p` ("" when none is found).
std::string vm_flags(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(line);
    if (in >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(ZeroedBuffer, FilledSpanIsAdvisedToHugePages) {
  const std::string mode = thp_mode();
  if (mode != "always" && mode != "madvise") GTEST_SKIP() << "THP mode '" << mode << "'";
  ZeroedFloats v = zeros(kFloats);
  fill_zeros(v.data(), v.size(), nullptr, "test buffer");
  // A 2 MiB-aligned address inside the buffer: the advice covers the whole huge pages.
  const auto mid =
      reinterpret_cast<std::uintptr_t>(v.data() + kFloats / 2) & ~((std::uintptr_t{2} << 20) - 1);
  const std::string flags = vm_flags(reinterpret_cast<const void*>(mid));
  ASSERT_FALSE(flags.empty()) << "no mapping found in /proc/self/smaps";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(ZeroedBuffer, AdviceOnSpansSmallerThanAHugePageIsHarmless) {
  ZeroedFloats v = zeros(1000);
  advise_huge_pages(v.data() + 1, 999);  // no whole 2 MiB page inside: nothing to advise
  fill_zeros(v.data(), v.size(), nullptr, "small buffer");
  for (float x : v) ASSERT_EQ(x, 0.0f);
}
#endif

}  // namespace
}  // namespace hetsgd::cpu
