// A recorded sequence of dispatches, barriers and copies in one command buffer, submitted with
// its own fence and replayable: record once (begin .. end), then submit() / wait() as often as
// needed without re-recording. The kernels' parameters are push constants recorded with each
// dispatch and buffer addresses that stay valid as long as their buffers, so a replay repeats
// exactly the recorded work; values that change between replays (positions, slots, token
// counts) belong in a host-visible parameter buffer (MemoryUse::kUpload) that shaders read by
// address, written by the host while the sequence is not pending.
//
// Ordering and visibility:
//   - barrier() between two dispatches makes the first one's writes visible to the second;
//     dispatches without a barrier between them may run concurrently;
//   - every sequence starts with a full memory barrier, so it sees everything submitted before
//     it on the queue (earlier sequences, copies), and ends with a barrier to the host, so that
//     after wait() the host reads its results in mapped memory;
//   - sequences run in submission order on the device's one queue. A forward pass records one
//     sequence per chunk of layers (N layers per submit keeps every submission short against
//     driver watchdogs), submits them in order, and may check for cancellation between waits.
// One command buffer from its own pool: no allocation when recording or submitting again.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/pipeline.h"

namespace channel::vulkan {

// n_groups workgroups as a grid of x * y (y > 1 only where n_groups exceeds the device's
// maxComputeWorkGroupCount[0]): x * y >= n_groups, and shaders number them flat_workgroup_index().
struct WorkgroupGrid {
  uint32_t x, y;
};
WorkgroupGrid fold_workgroups(const DeviceInfo& info, uint64_t n_groups);

// Workgroups of per_group items each that cover n items.
inline uint32_t groups_for(uint64_t n, uint32_t per_group) {
  return static_cast<uint32_t>((n + per_group - 1) / per_group);
}

class CommandSequence {
 public:
  explicit CommandSequence(Device& device);
  ~CommandSequence();  // waits for a pending submission first
  CommandSequence(const CommandSequence&) = delete;
  CommandSequence& operator=(const CommandSequence&) = delete;

  // ---- recording
  // Starts recording anew (waits for a pending submission; what was recorded before is dropped).
  void begin();
  // One dispatch of groups_x * groups_y * groups_z workgroups with `push` as push constants.
  void dispatch(const ComputePipeline& pipeline, std::span<const std::byte> push, uint32_t groups_x,
                uint32_t groups_y = 1, uint32_t groups_z = 1);
  template <class Push>
  void dispatch(const ComputePipeline& pipeline, const Push& push, uint32_t groups_x, uint32_t groups_y = 1,
                uint32_t groups_z = 1) {
    dispatch(pipeline, std::as_bytes(std::span(&push, 1)), groups_x, groups_y, groups_z);
  }
  // n_groups workgroups numbered flat_workgroup_index() (common.glsl): folded into a second grid
  // dimension where n_groups exceeds maxComputeWorkGroupCount[0]; the shader must ignore indices
  // >= n_groups (the fold rounds up).
  template <class Push>
  void dispatch_groups(const ComputePipeline& pipeline, const Push& push, uint64_t n_groups) {
    const WorkgroupGrid grid = fold_workgroups(device_.info(), n_groups);
    dispatch(pipeline, push, grid.x, grid.y);
  }
  // A dispatch whose workgroup counts are read, when it runs, from `args` at `offset` (a
  // VkDispatchIndirectCommand, 4-byte aligned): counts that change between replays, written by
  // the host while the sequence is not pending (fold_workgroups folds wide ones as
  // dispatch_groups does). Zero workgroups are allowed and dispatch nothing.
  template <class Push>
  void dispatch_indirect(const ComputePipeline& pipeline, const Push& push, const Buffer& args, uint64_t offset) {
    dispatch_indirect(pipeline, std::as_bytes(std::span(&push, 1)), args, offset);
  }
  void dispatch_indirect(const ComputePipeline& pipeline, std::span<const std::byte> push, const Buffer& args,
                         uint64_t offset);
  // Writes before it (shaders, copies, fills) are visible to reads and writes after it.
  void barrier();
  // Fills `bytes` (a multiple of 4) at `offset` with the 32-bit pattern `word` (e.g. NaN poison).
  void fill(const Buffer& buffer, uint64_t offset, uint64_t bytes, uint32_t word);
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
  // Finishes recording; the sequence can then be submitted any number of times.
  void end();

  // ---- execution
  // Queues the recorded commands (waiting first if the previous submission is still pending).
  void submit();
  // Waits for the last submission (no-op when none is pending).
  void wait();
  void run() {
    submit();
    wait();
  }

  bool recorded() const { return state_ == State::kRecorded; }
  bool pending() const { return pending_; }
  uint32_t dispatch_count() const { return dispatches_; }

  // ---- profiling
  // Records GPU timestamp `index` (< kMaxTimestamps): the time at which all commands recorded
  // before it have finished. After wait(), timestamps_ns()[i] is the time of index i in the last
  // submission, in nanoseconds from an arbitrary origin (differences are durations: per-kernel
  // times against bytes moved), NaN for indices not written in this recording. Unavailable where
  // Device::timestamp_valid_bits() is 0 (throws).
  static constexpr uint32_t kMaxTimestamps = 128;
  void write_timestamp(uint32_t index);
  std::vector<double> timestamps_ns() const;

 private:
  enum class State { kEmpty, kRecording, kRecorded };
  void require_recording(const char* what) const;
  void bind(const ComputePipeline& pipeline, std::span<const std::byte> push);

  Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  State state_ = State::kEmpty;
  bool pending_ = false;
  bool submitted_ = false;  // since the last begin()
  uint32_t dispatches_ = 0;
  VkPipeline bound_ = VK_NULL_HANDLE;
  VkQueryPool timestamps_ = VK_NULL_HANDLE;  // made on first use
  uint64_t timestamps_written_ = 0;          // bit i: index i is written in this recording
  bool timestamps_reset_ = false;            // this recording resets the pool before its first write
};

}  // namespace channel::vulkan
