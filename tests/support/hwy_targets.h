// Runs a test suite once per Highway target compiled in and supported by this CPU (SCALAR,
// SSSE3, SSE4, AVX2, AVX3 on an AVX-512 machine), so that every dispatched kernel is checked,
// not only the best one.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <string>

namespace channel::hwy_testing {

class PerHwyTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

inline std::string hwy_target_test_name(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

}  // namespace channel::hwy_testing

#define CHANNEL_INSTANTIATE_PER_HWY_TARGET(suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(HwyTargets, suite, ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()), \
                           ::channel::hwy_testing::hwy_target_test_name)
