// Device addresses: what `--devices` accepts and what it refuses.
#include <gtest/gtest.h>

#include "core/device.h"
#include "core/error.h"

namespace hetsgd {
namespace {

TEST(DeviceId, ParsesKindsOrdinalsAndSpeeds) {
  const std::vector<DeviceId> ids = parse_device_list("cpu,cpu:1@0.33,cuda:2@.5");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1].ordinal, 1);
  EXPECT_DOUBLE_EQ(ids[1].speed, 0.33);
  EXPECT_EQ(ids[2].kind, DeviceKind::kCuda);
  EXPECT_DOUBLE_EQ(parse_device_id("cpu@0.01").speed, kMinEmulatedSpeed);
}

TEST(DeviceId, RefusesMalformedListsAndSpeedsOutsideTheDocumentedBound) {
  for (const char* bad :
       {"cpu,", ",cpu", "cpu,,cpu", "", "cpu@+1", "cpu@-1", "cpu@+-1", "cpu@0.000001", "cpu@1e-300",
        "cpu@1.5", "cpu@nan", "cpu@inf", "cpu:+1", "cpu:x", "tpu:0"}) {
    EXPECT_THROW(parse_device_list(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hetsgd
