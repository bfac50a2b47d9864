// Reading the next matrix-vector product's weights into the GPU's L2 cache while a stage that
// keeps few compute units busy runs (shaders/prefetch.comp).
//
// A decode step is a chain of dependent dispatches, and several links of it occupy a handful of
// workgroups: each norm stage is one workgroup (11-12 us a layer on the H200 for Gemma 3 12B),
// the decode attention at shallow depth one per head (17-19 us), QK-norm + RoPE one per head
// (6.7 us). Meanwhile the memory system is idle, and the products that follow stream their
// weights from it (qkv 17.7 MB in 11.4 us, gate/up 66 MB in 24.3 us: well below the ~4 TB/s a
// plain read reaches). A prefetch recorded right after such a stage, with no barrier between the
// two, runs beside it: the stage's workgroups were scheduled first, the prefetch's take the idle
// units, and the product then reads from the L2 cache what it would have waited on DRAM for.
// The barrier after the pair waits for both, so a prefetch is sized to end within the stage
// (`budget_bytes`); bytes beyond what the stage hides would have been read by the product anyway.
//
// Nothing the prefetch does changes a result: it only reads. Each word read is XORed into a
// checksum in device memory (so the reads are kept, and tests check that every word was read):
// kPrefetchChecksumWords words, which a workgroup's XOR goes to by its index, so that a thousand
// workgroups do not queue on one atomic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device_matrix.h"
#include "backend/vulkan/pipeline.h"

namespace channel::vulkan {

struct ByteRange {
  VkDeviceAddress address = 0;
  uint64_t bytes = 0;
};

// The memory rows [0, n_rows) of `m` occupy, as its kernels read it: the rows (F32 / F16 / BF16),
// or the quants and then the scales (Q4_0 / Q8_0 split blocks).
std::vector<ByteRange> leading_rows(const DeviceMatrix& m, int64_t n_rows);

class WeightPrefetch {
 public:
  // budget_bytes: the most bytes one record() reads; 0 records nothing.
  WeightPrefetch(Device& device, PipelineCache& pipelines, uint64_t budget_bytes);

  uint64_t budget_bytes() const { return budget_bytes_; }

  // Records a read of the leading rows of `matrices` (null entries skipped): all of them where
  // they fit the budget, else the same fraction of each (a product takes its rows in order, the
  // gated one both matrices' rows at the same pace). No barrier before or after: record it after
  // the stage it runs beside, before that stage's barrier.
  void record(CommandSequence& seq, std::span<const DeviceMatrix* const> matrices) const;
  // Records a read of `ranges` (whole 16-byte words inside each; at most kPrefetchRanges).
  void record_ranges(CommandSequence& seq, std::span<const ByteRange> ranges) const;

  // kPrefetchChecksumWords uints, zero at first: their XOR is the XOR of every 32-bit word the
  // sequences run so far have read (tests).
  const Buffer& checksum() const { return checksum_; }

 private:
  PipelineCache& pipelines_;
  uint64_t budget_bytes_;
  Buffer checksum_;
};

}  // namespace channel::vulkan
