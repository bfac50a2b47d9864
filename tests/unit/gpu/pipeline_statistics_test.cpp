// The driver's pipeline statistics (VK_KHR_pipeline_executable_properties), captured only where
// asked: what CHANNEL_VULKAN_PIPELINE_STATS=1 prints.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/vulkan/pipeline.h"
#include "backend/vulkan/pipeline_statistics.h"
#include "gpu_test_support.h"

namespace channel::vulkan {
namespace {

TEST(VulkanPipelineStatistics, CapturedOnlyWhereAsked) {
  CHANNEL_GPU_CONTEXT(gpu);
  if (!gpu->device.info().features.pipeline_executable_info) {
    GTEST_SKIP() << gpu->device.info().name << " lacks VK_KHR_pipeline_executable_properties";
  }
  const uint32_t specialization[] = {64};
  PipelineCache plain(gpu->device);
  EXPECT_TRUE(plain.get("copy_rows", specialization).statistics().empty());
  EXPECT_TRUE(plain.statistics_report().empty());

  PipelineCache capturing(gpu->device, /*capture_statistics=*/true);
  const ComputePipeline& pipeline = capturing.get("copy_rows", specialization);
  ASSERT_FALSE(pipeline.statistics().empty());
  for (const PipelineStatistic& s : pipeline.statistics()) {
    EXPECT_FALSE(s.name.empty());
    EXPECT_FALSE(s.value.empty());
    EXPECT_NE(s.value, "?") << s.name;
  }
  // The report names the shader and its specialization constants, then the statistics.
  const std::vector<std::string> report = capturing.statistics_report();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].rfind("copy_rows [64]: " + pipeline.statistics()[0].name + "=", 0), 0u) << report[0];
}

TEST(VulkanPipelineStatistics, FormatsOneLineNamingExecutablesOnlyWhereSeveral) {
  const std::vector<PipelineStatistic> one = {{"Compute", "Register Count", "168"}, {"Compute", "Spills", "0"}};
  EXPECT_EQ(format_pipeline_statistics(one), "Register Count=168, Spills=0");
  const std::vector<PipelineStatistic> two = {{"A", "x", "1"}, {"B", "x", "2"}};
  EXPECT_EQ(format_pipeline_statistics(two), "A: x=1, B: x=2");
  EXPECT_EQ(format_pipeline_statistics({}), "");
}

}  // namespace
}  // namespace channel::vulkan
