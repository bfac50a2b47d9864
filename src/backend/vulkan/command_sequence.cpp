#include "backend/vulkan/command_sequence.h"

#include <fmt/format.h>

#include <bit>
#include <limits>

#include "core/error.h"

namespace channel::vulkan {
namespace {

void memory_barrier(const VolkDeviceTable& fn, VkCommandBuffer commands, VkPipelineStageFlags src_stages,
                    VkAccessFlags src_access, VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = src_access;
  barrier.dstAccessMask = dst_access;
  fn.vkCmdPipelineBarrier(commands, src_stages, dst_stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

constexpr VkPipelineStageFlags kWork = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWorkWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kWorkAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

}  // namespace

CommandSequence::CommandSequence(Device& device) : device_(device) {
  const VolkDeviceTable& fn = device.fn();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = device.queue_family();
  check(fn.vkCreateCommandPool(device.handle(), &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  allocate.commandPool = pool_;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (fn.vkAllocateCommandBuffers(device.handle(), &allocate, &commands_) != VK_SUCCESS ||
      fn.vkCreateFence(device.handle(), &fence, nullptr, &fence_) != VK_SUCCESS) {
    fn.vkDestroyCommandPool(device.handle(), pool_, nullptr);
    fail("Vulkan: could not create a command buffer and fence");
  }
}

CommandSequence::~CommandSequence() {
  const VolkDeviceTable& fn = device_.fn();
  if (pending_) fn.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
  if (timestamps_ != VK_NULL_HANDLE) fn.vkDestroyQueryPool(device_.handle(), timestamps_, nullptr);
  fn.vkDestroyFence(device_.handle(), fence_, nullptr);
  fn.vkDestroyCommandPool(device_.handle(), pool_, nullptr);  // frees the command buffer
}

void CommandSequence::require_recording(const char* what) const {
  if (state_ != State::kRecording) fail("Vulkan: CommandSequence::{} outside begin() .. end()", what);
}

void CommandSequence::begin() {
  wait();
  const VolkDeviceTable& fn = device_.fn();
  check(fn.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};  // not one-time: replayable
  check(fn.vkBeginCommandBuffer(commands_, &info), "vkBeginCommandBuffer");
  state_ = State::kRecording;
  dispatches_ = 0;
  bound_ = VK_NULL_HANDLE;
  timestamps_written_ = 0;
  timestamps_reset_ = false;
  submitted_ = false;
  // Everything earlier on the queue (other sequences, copies) before anything here.
  memory_barrier(fn, commands_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

WorkgroupGrid fold_workgroups(const DeviceInfo& info, uint64_t n_groups) {
  const uint64_t max_x = info.max_workgroup_count[0];
  if (n_groups <= max_x) return {static_cast<uint32_t>(n_groups), 1};
  const uint64_t y = (n_groups + max_x - 1) / max_x;
  const uint64_t x = (n_groups + y - 1) / y;
  if (y > info.max_workgroup_count[1]) fail("Vulkan: {} workgroups are more than the device can dispatch", n_groups);
  return {static_cast<uint32_t>(x), static_cast<uint32_t>(y)};
}

void CommandSequence::bind(const ComputePipeline& pipeline, std::span<const std::byte> push) {
  if (push.size() > kMaxPushConstantBytes || push.size() % 4 != 0) {
    fail("Vulkan: {} bytes of push constants for {} (at most {}, a multiple of 4)", push.size(), pipeline.name(),
         kMaxPushConstantBytes);
  }
  const VolkDeviceTable& fn = device_.fn();
  if (bound_ != pipeline.handle()) {
    fn.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
    bound_ = pipeline.handle();
  }
  if (!push.empty()) {
    fn.vkCmdPushConstants(commands_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          static_cast<uint32_t>(push.size()), push.data());
  }
}

void CommandSequence::dispatch(const ComputePipeline& pipeline, std::span<const std::byte> push, uint32_t groups_x,
                               uint32_t groups_y, uint32_t groups_z) {
  require_recording("dispatch");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;
  const DeviceInfo& info = device_.info();
  if (groups_x > info.max_workgroup_count[0] || groups_y > info.max_workgroup_count[1] ||
      groups_z > info.max_workgroup_count[2]) {
    fail("Vulkan: dispatch of {} x {} x {} workgroups for {} exceeds the device's maxComputeWorkGroupCount", groups_x,
         groups_y, groups_z, pipeline.name());
  }
  bind(pipeline, push);
  device_.fn().vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
  ++dispatches_;
}

void CommandSequence::dispatch_indirect(const ComputePipeline& pipeline, std::span<const std::byte> push,
                                        const Buffer& args, uint64_t offset) {
  require_recording("dispatch_indirect");
  if (offset % 4 != 0 || offset + sizeof(VkDispatchIndirectCommand) > args.size()) {
    fail("Vulkan: indirect workgroup counts for {} at byte {} of a {}-byte buffer", pipeline.name(), offset,
         args.size());
  }
  bind(pipeline, push);
  device_.fn().vkCmdDispatchIndirect(commands_, args.handle(), offset);
  ++dispatches_;
}

void CommandSequence::barrier() {
  require_recording("barrier");
  memory_barrier(device_.fn(), commands_, kWork, kWorkWrites, kWork, kWorkAccess);
}

void CommandSequence::fill(const Buffer& buffer, uint64_t offset, uint64_t bytes, uint32_t word) {
  require_recording("fill");
  if (bytes == 0) return;
  device_.fn().vkCmdFillBuffer(commands_, buffer.handle(), offset, bytes, word);
}

void CommandSequence::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                           uint64_t bytes) {
  require_recording("copy");
  if (bytes == 0) return;
  const VkBufferCopy region{src_offset, dst_offset, bytes};
  device_.fn().vkCmdCopyBuffer(commands_, src.handle(), dst.handle(), 1, &region);
}

void CommandSequence::end() {
  require_recording("end");
  const VolkDeviceTable& fn = device_.fn();
  // Results visible to the host once the fence has signalled.
  memory_barrier(fn, commands_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
  check(fn.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  state_ = State::kRecorded;
}

void CommandSequence::write_timestamp(uint32_t index) {
  require_recording("write_timestamp");
  if (index >= kMaxTimestamps) fail("Vulkan: timestamp {} (at most {})", index, kMaxTimestamps);
  if (device_.timestamp_valid_bits() == 0) fail("Vulkan: {} has no timestamps on its compute queue", device_.info().name);
  const VolkDeviceTable& fn = device_.fn();
  if (timestamps_ == VK_NULL_HANDLE) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kMaxTimestamps;
    check(fn.vkCreateQueryPool(device_.handle(), &info, nullptr, &timestamps_), "vkCreateQueryPool");
  }
  if (!timestamps_reset_) {  // queries must be reset before they are written, on every replay
    fn.vkCmdResetQueryPool(commands_, timestamps_, 0, kMaxTimestamps);
    timestamps_reset_ = true;
  }
  fn.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, index);
  timestamps_written_ |= uint64_t{1} << index;
}

std::vector<double> CommandSequence::timestamps_ns() const {
  if (timestamps_written_ == 0) return {};
  if (pending_ || !submitted_) fail("Vulkan: CommandSequence::timestamps_ns before submit() and wait()");
  const uint32_t bits = device_.timestamp_valid_bits();
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const auto n = static_cast<uint32_t>(64 - std::countl_zero(timestamps_written_));
  std::vector<double> ns(n, std::numeric_limits<double>::quiet_NaN());
  for (uint32_t i = 0; i < n; ++i) {
    if (!(timestamps_written_ >> i & 1)) continue;  // never written: waiting for it would hang
    uint64_t ticks = 0;
    check(device_.fn().vkGetQueryPoolResults(device_.handle(), timestamps_, i, 1, sizeof(ticks), &ticks,
                                             sizeof(ticks), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    ns[i] = static_cast<double>(ticks & mask) * device_.info().timestamp_period_ns;
  }
  return ns;
}

void CommandSequence::submit() {
  if (state_ != State::kRecorded) fail("Vulkan: CommandSequence::submit before end()");
  wait();
  check(device_.fn().vkResetFences(device_.handle(), 1, &fence_), "vkResetFences");
  device_.submit(commands_, fence_);
  pending_ = true;
  submitted_ = true;
}

void CommandSequence::wait() {
  if (!pending_) return;
  device_.wait_for(fence_);
  pending_ = false;
}

}  // namespace channel::vulkan
