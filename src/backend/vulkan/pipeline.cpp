#include "backend/vulkan/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/vulkan/shader_registry.h"

namespace channel::vulkan {

PipelineCache::PipelineCache(Device& device, bool capture_statistics)
    : PipelineCache(device, std::span<const uint8_t>{}) {
  capture_statistics_ = capture_statistics && device.info().features.pipeline_executable_info;
}

PipelineCache::PipelineCache(Device& device, std::span<const uint8_t> initial_data) : device_(device) {
  const VolkDeviceTable& fn = device.fn();
  VkPipelineCacheCreateInfo cache{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  cache.initialDataSize = initial_data.size();
  cache.pInitialData = initial_data.data();
  check(fn.vkCreatePipelineCache(device.handle(), &cache, nullptr, &cache_), "vkCreatePipelineCache");

  VkPushConstantRange push{};
  push.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  push.offset = 0;
  push.size = kMaxPushConstantBytes;
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &push;
  check(fn.vkCreatePipelineLayout(device.handle(), &layout, nullptr, &layout_), "vkCreatePipelineLayout");
}

PipelineCache::~PipelineCache() {
  const VolkDeviceTable& fn = device_.fn();
  for (auto& [key, pipeline] : pipelines_) fn.vkDestroyPipeline(device_.handle(), pipeline->pipeline_, nullptr);
  fn.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
  fn.vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

const ComputePipeline& PipelineCache::get(std::string_view shader, std::span<const uint32_t> specialization) {
  auto key = std::make_pair(std::string(shader), std::vector<uint32_t>(specialization.begin(), specialization.end()));
  if (const auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;

  const EmbeddedShader& code = find_shader(shader);
  const VolkDeviceTable& fn = device_.fn();
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = code.spirv.size_bytes();
  module_info.pCode = code.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(fn.vkCreateShaderModule(device_.handle(), &module_info, nullptr, &module), "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t i = 0; i < specialization.size(); ++i) {
    entries.push_back(VkSpecializationMapEntry{i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)});
  }
  VkSpecializationInfo spec{};
  spec.mapEntryCount = static_cast<uint32_t>(entries.size());
  spec.pMapEntries = entries.data();
  spec.dataSize = specialization.size_bytes();
  spec.pData = specialization.data();

  VkComputePipelineCreateInfo create{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  create.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  create.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  create.stage.module = module;
  create.stage.pName = "main";
  create.stage.pSpecializationInfo = specialization.empty() ? nullptr : &spec;
  create.layout = layout_;
  if (capture_statistics_) create.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  auto pipeline = std::make_unique<ComputePipeline>();
  const VkResult result =
      fn.vkCreateComputePipelines(device_.handle(), cache_, 1, &create, nullptr, &pipeline->pipeline_);
  fn.vkDestroyShaderModule(device_.handle(), module, nullptr);
  check(result, fmt::format("vkCreateComputePipelines ({})", shader));
  pipeline->layout_ = layout_;
  pipeline->name_ = std::string(shader);
  ComputePipeline& made = *pipelines_.emplace(std::move(key), std::move(pipeline)).first->second;
  // (Kept first: the destructor frees it should the driver's statistics fail to read.)
  if (capture_statistics_) made.statistics_ = read_pipeline_statistics(device_, made.pipeline_);
  return made;
}

std::vector<std::string> PipelineCache::statistics_report() const {
  std::vector<std::string> lines;
  for (const auto& [key, pipeline] : pipelines_) {
    if (pipeline->statistics_.empty()) continue;
    lines.push_back(fmt::format("{} [{}]: {}", key.first, fmt::join(key.second, ","),
                                format_pipeline_statistics(pipeline->statistics_)));
  }
  return lines;
}

std::vector<uint8_t> PipelineCache::serialize() const {
  const VolkDeviceTable& fn = device_.fn();
  size_t size = 0;
  check(fn.vkGetPipelineCacheData(device_.handle(), cache_, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<uint8_t> data(size);
  check(fn.vkGetPipelineCacheData(device_.handle(), cache_, &size, data.data()), "vkGetPipelineCacheData");
  data.resize(size);
  return data;
}

}  // namespace channel::vulkan
