#include "backend/vulkan/weight_prefetch.h"

#include <algorithm>

#include "backend/vulkan/shader_push.h"
#include "core/error.h"
#include "model/ggml_type.h"

namespace channel::vulkan {

namespace {

constexpr uint32_t kWorkgroup = PREFETCH_WORKGROUP;
constexpr uint32_t kLoadsInFlight = PREFETCH_LOADS_IN_FLIGHT;
// Enough workgroups to keep every load of a few megabytes in flight at once; more would only
// queue behind each other (the kernel strides over whatever they do not cover).
constexpr uint64_t kMaxWorkgroups = 2048;

}  // namespace

std::vector<ByteRange> leading_rows(const DeviceMatrix& m, int64_t n_rows) {
  n_rows = std::clamp<int64_t>(n_rows, 0, m.rows);
  std::vector<ByteRange> ranges{{m.data, m.row_bytes * static_cast<uint64_t>(n_rows)}};
  if (is_quantized(m.type)) {
    ranges.push_back({m.scales, static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(m.cols / kQuantBlock) * 2});
  }
  return ranges;
}

WeightPrefetch::WeightPrefetch(Device& device, PipelineCache& pipelines, uint64_t budget_bytes)
    : pipelines_(pipelines),
      budget_bytes_(budget_bytes),
      checksum_(device, kPrefetchChecksumWords * 4, MemoryUse::kDevice) {
  CommandSequence seq(device);
  seq.begin();
  seq.fill(checksum_, 0, checksum_.size(), 0);
  seq.end();
  seq.run();
}

void WeightPrefetch::record(CommandSequence& seq, std::span<const DeviceMatrix* const> matrices) const {
  if (budget_bytes_ == 0) return;
  uint64_t total = 0;
  for (const DeviceMatrix* m : matrices) {
    if (m != nullptr) total += device_matrix_bytes(m->type, m->rows, m->cols);
  }
  if (total == 0) return;
  const double fraction = std::min(1.0, static_cast<double>(budget_bytes_) / static_cast<double>(total));
  std::vector<ByteRange> ranges;
  for (const DeviceMatrix* m : matrices) {
    if (m == nullptr) continue;
    const auto rows = static_cast<int64_t>(fraction * static_cast<double>(m->rows));
    for (const ByteRange& range : leading_rows(*m, rows)) ranges.push_back(range);
  }
  record_ranges(seq, ranges);
}

void WeightPrefetch::record_ranges(CommandSequence& seq, std::span<const ByteRange> ranges) const {
  if (ranges.size() > static_cast<size_t>(kPrefetchRanges)) {
    fail("internal: a prefetch of {} ranges (at most {})", ranges.size(), kPrefetchRanges);
  }
  PrefetchPush push{};
  push.checksum = checksum_.address();
  uint64_t words = 0;
  for (size_t r = 0; r < ranges.size(); ++r) {
    // The whole 16-byte words inside the range (a prefetch may leave a few edge bytes out).
    const VkDeviceAddress begin = (ranges[r].address + 15) / 16 * 16;
    const VkDeviceAddress end = (ranges[r].address + ranges[r].bytes) / 16 * 16;
    if (end <= begin) continue;
    push.address[r] = begin;
    push.words[r] = static_cast<uint32_t>((end - begin) / 16);
    words += push.words[r];
  }
  if (words == 0) return;
  const uint64_t groups = std::min(kMaxWorkgroups, (words + kWorkgroup * kLoadsInFlight - 1) / (kWorkgroup * kLoadsInFlight));
  seq.dispatch_groups(pipelines_.get("prefetch"), push, groups);
}

}  // namespace channel::vulkan
