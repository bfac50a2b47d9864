#include "backend/vulkan/pipeline_statistics.h"

#include <fmt/format.h>

namespace channel::vulkan {
namespace {

std::string statistic_value(const VkPipelineExecutableStatisticKHR& statistic) {
  switch (statistic.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return statistic.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return fmt::format("{}", statistic.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return fmt::format("{}", statistic.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return fmt::format("{:g}", statistic.value.f64);
    default: return "?";
  }
}

}  // namespace

std::vector<PipelineStatistic> read_pipeline_statistics(const Device& device, VkPipeline pipeline) {
  std::vector<PipelineStatistic> statistics;
  if (!device.info().features.pipeline_executable_info) return statistics;
  const VolkDeviceTable& fn = device.fn();
  VkPipelineInfoKHR pipeline_info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipeline_info.pipeline = pipeline;
  const auto executables = enumerate<VkPipelineExecutablePropertiesKHR>(
      [&](uint32_t* n, VkPipelineExecutablePropertiesKHR* data) {
        return fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &pipeline_info, n, data);
      },
      "vkGetPipelineExecutablePropertiesKHR", {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  for (uint32_t e = 0; e < executables.size(); ++e) {
    VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    executable.pipeline = pipeline;
    executable.executableIndex = e;
    const auto values = enumerate<VkPipelineExecutableStatisticKHR>(
        [&](uint32_t* n, VkPipelineExecutableStatisticKHR* data) {
          return fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, n, data);
        },
        "vkGetPipelineExecutableStatisticsKHR", {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    for (const VkPipelineExecutableStatisticKHR& value : values) {
      statistics.push_back({executables[e].name, value.name, statistic_value(value)});
    }
  }
  return statistics;
}

std::string format_pipeline_statistics(std::span<const PipelineStatistic> statistics) {
  std::string line;
  const bool several = !statistics.empty() && statistics.front().executable != statistics.back().executable;
  for (const PipelineStatistic& s : statistics) {
    if (!line.empty()) line += ", ";
    line += several ? fmt::format("{}: {}={}", s.executable, s.name, s.value) : fmt::format("{}={}", s.name, s.value);
  }
  return line;
}

}  // namespace channel::vulkan
