// Compute pipelines from the embedded SPIR-V.
//
// Conventions every shader follows, so that one pipeline layout serves them all:
//   - no descriptor sets: buffers are passed as device addresses (buffer.h) in push constants;
//   - push constants: one block of at most kMaxPushConstantBytes (the minimum every device has);
//   - specialization constants: constant_id 0, 1, 2, ... in order, all 32-bit; where a shader
//     has `layout(local_size_x_id = 0)`, constant 0 is its workgroup size.
// Pipelines are made once (PipelineCache::get creates on first use and keeps them) and live as
// long as the cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/vulkan/device.h"
#include "backend/vulkan/pipeline_statistics.h"

namespace channel::vulkan {

constexpr uint32_t kMaxPushConstantBytes = 128;

class ComputePipeline {
 public:
  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  const std::string& name() const { return name_; }
  // The driver's statistics (pipeline_statistics.h), read once at creation where the cache
  // captures them; empty otherwise.
  std::span<const PipelineStatistic> statistics() const { return statistics_; }

 private:
  friend class PipelineCache;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::string name_;
  std::vector<PipelineStatistic> statistics_;
};

class PipelineCache {
 public:
  // capture_statistics: pipelines are created with the driver's statistics captured (where the
  // device has VK_KHR_pipeline_executable_properties; drivers may then skip their own caches).
  explicit PipelineCache(Device& device, bool capture_statistics = false);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipeline of embedded shader `shader` with these specialization constants (ids 0, 1, ..),
  // created on first request. Not thread-safe: record from one thread.
  const ComputePipeline& get(std::string_view shader, std::span<const uint32_t> specialization = {});

  // The driver's VkPipelineCache contents, to save; a later PipelineCache(device, data) starts
  // from them (drivers check that the data is theirs and ignore it otherwise).
  std::vector<uint8_t> serialize() const;
  PipelineCache(Device& device, std::span<const uint8_t> initial_data);

  size_t size() const { return pipelines_.size(); }

  // One line per pipeline made so far, "shader [specialization constants]: statistics", for
  // those whose statistics were captured.
  std::vector<std::string> statistics_report() const;

 private:
  Device& device_;
  bool capture_statistics_ = false;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;  // push constants only, shared by all pipelines
  std::map<std::pair<std::string, std::vector<uint32_t>>, std::unique_ptr<ComputePipeline>, std::less<>> pipelines_;
};

}  // namespace channel::vulkan
