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
  uint32_t n_executables = 0;
  check(fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &pipeline_info, &n_executables, nullptr),
        "vkGetPipelineExecutablePropertiesKHR");
  std::vector<VkPipelineExecutablePropertiesKHR> executables(
      n_executables, VkPipelineExecutablePropertiesKHR{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  check(fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &pipeline_info, &n_executables, executables.data()),
        "vkGetPipelineExecutablePropertiesKHR");
  for (uint32_t e = 0; e < n_executables; ++e) {
    VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    executable.pipeline = pipeline;
    executable.executableIndex = e;
    uint32_t n_statistics = 0;
    check(fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n_statistics, nullptr),
          "vkGetPipelineExecutableStatisticsKHR");
    std::vector<VkPipelineExecutableStatisticKHR> values(
        n_statistics, VkPipelineExecutableStatisticKHR{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    check(fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &executable, &n_statistics, values.data()),
          "vkGetPipelineExecutableStatisticsKHR");
    for (uint32_t i = 0; i < n_statistics; ++i) {
      statistics.push_back({executables[e].name, values[i].name, statistic_value(values[i])});
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
