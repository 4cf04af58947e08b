#include "core/forest/projection_dot.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/random.h"

namespace hetsgd {
namespace {

// One dot product at a time, in the order projection_dot2() documents: the reference.
float projection_dot(const float* a, const float* b, int n) {
  float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int c = 0;
  for (; c + 8 <= n; c += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[c + j] * b[c + j];
  }
  for (; c < n; ++c) s[0] += a[c] * b[c];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

std::uint32_t bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The paired dot products are the single one's, bit for bit, at every length (tails of 0 to 7
// included) and with the pairs' operands shared or aliased as k-means passes them: a forest
// grown through either is the same.
TEST(ProjectionDot, TwoAtOnceGiveTheSingleDotsBits) {
  std::uint64_t counter = 0;
  for (int n = 0; n <= 103; ++n) {
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) {
      a[i] = uniform01(11, counter++) * 2.0f - 1.0f;
      b[i] = uniform01(11, counter++) * 2.0f - 1.0f;
      c[i] = uniform01(11, counter++) * 2.0f - 1.0f;
    }
    float x = 0.0f, y = 0.0f;
    projection_dot2(a.data(), b.data(), a.data(), c.data(), n, &x, &y);
    EXPECT_EQ(bits(x), bits(projection_dot(a.data(), b.data(), n))) << "n " << n;
    EXPECT_EQ(bits(y), bits(projection_dot(a.data(), c.data(), n))) << "n " << n;
    projection_dot2(b.data(), a.data(), c.data(), a.data(), n, &x, &x);  // one output twice
    EXPECT_EQ(bits(x), bits(projection_dot(c.data(), a.data(), n))) << "n " << n;
  }
  const float u[3] = {1.0f, 2.0f, 3.0f}, w[3] = {4.0f, -5.0f, 6.0f};
  EXPECT_EQ(projection_dot(u, w, 3), 12.0f);
}

}  // namespace
}  // namespace hetsgd
