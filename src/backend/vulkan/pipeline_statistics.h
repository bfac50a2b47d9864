// The driver's statistics of a compiled pipeline (VK_KHR_pipeline_executable_properties): what
// a kernel costs the device before it runs, e.g. on NVIDIA its registers a thread, which decide
// how many workgroups share a multiprocessor. Read for pipelines created with
// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR (PipelineCache does where asked), so that a
// change to a kernel's occupancy is measured rather than guessed from its source.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "backend/vulkan/device.h"

namespace channel::vulkan {

struct PipelineStatistic {
  std::string executable;  // the driver's name for the compiled stage (one for a compute pipeline)
  std::string name;        // e.g. "Register Count"
  std::string value;       // formatted as the driver typed it (bool, integer or float)
};

// Every statistic of every executable of `pipeline`, in the driver's order; none where the
// device lacks the extension's feature. The pipeline must have been created with
// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR.
std::vector<PipelineStatistic> read_pipeline_statistics(const Device& device, VkPipeline pipeline);

// One line: "name=value, ..." (executables named where a pipeline has several).
std::string format_pipeline_statistics(std::span<const PipelineStatistic> statistics);

}  // namespace channel::vulkan
