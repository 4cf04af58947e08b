#include "core/resident.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hetsgd {
namespace {

std::size_t page_size() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

// A fresh private anonymous mapping of `pages` pages, none of them mapped in yet.
struct Mapping {
  explicit Mapping(std::size_t pages) : bytes(pages * page_size()) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
  }
  ~Mapping() {
    if (base != nullptr) ::munmap(base, bytes);
  }
  // How many of its pages are resident (mincore).
  std::size_t resident() const {
    std::vector<unsigned char> in(bytes / page_size());
    if (::mincore(base, bytes, in.data()) != 0) return static_cast<std::size_t>(-1);
    std::size_t n = 0;
    for (unsigned char c : in) n += c & 1u;
    return n;
  }
  std::size_t bytes;
  std::uint8_t* base;
};

TEST(Resident, MapsEveryPageOfAFreshRangeAndLeavesItZero) {
  Mapping m(64);
  ASSERT_NE(m.base, nullptr);
  ASSERT_EQ(m.resident(), 0u);
  if (!make_resident(m.base, m.bytes)) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  EXPECT_EQ(m.resident(), 64u);
  for (std::size_t i = 0; i < m.bytes; ++i) ASSERT_EQ(m.base[i], 0u) << "byte " << i;
}

TEST(Resident, MapsOnlyTheWholePagesInsideTheRange) {
  Mapping m(4);
  ASSERT_NE(m.base, nullptr);
  const std::size_t page = page_size();
  // Under a page, or straddling two without covering one: nothing to map.
  EXPECT_FALSE(make_resident(m.base + 1, page - 1));
  EXPECT_FALSE(make_resident(m.base + page / 2, page));
  EXPECT_FALSE(make_resident(nullptr, 4 * page));
  EXPECT_EQ(m.resident(), 0u);
  // From the middle of page 0 to the middle of page 3: pages 1 and 2 alone.
  if (!make_resident(m.base + page / 2, 3 * page)) GTEST_SKIP() << "no MADV_POPULATE_WRITE";
  EXPECT_EQ(m.resident(), 2u);
}

TEST(Resident, KeepsWhatTheRangeHolds) {
  std::vector<std::uint8_t> v(std::size_t{1} << 20);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
  make_resident(v.data(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], static_cast<std::uint8_t>(i * 7 + 3)) << "byte " << i;
}

TEST(Resident, ResizeKeepsTheValuesAndZeroesTheNewElements) {
  std::vector<float> v{1.5f, -2.0f, 3.25f};
  resize_resident(&v, std::size_t{1} << 20);
  ASSERT_EQ(v.size(), std::size_t{1} << 20);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 3.25f);
  for (std::size_t i = 3; i < v.size(); ++i) ASSERT_EQ(v[i], 0.0f) << "element " << i;
  resize_resident(&v, 2);  // shrinking keeps the front
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f}));
}

TEST(Resident, ACopyHoldsTheSameElementsAndNoSpareCapacity) {
  std::vector<int> v;
  for (int i = 0; i < 100000; ++i) v.push_back(i * 3 - 7);
  const std::vector<int> c = resident_copy(v);
  EXPECT_EQ(c, v);
  EXPECT_EQ(c.capacity(), v.size());
  EXPECT_TRUE(resident_copy(std::vector<int>{}).empty());
}

}  // namespace
}  // namespace hetsgd
