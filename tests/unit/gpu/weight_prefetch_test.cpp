// The weight prefetch (prefetch.comp, weight_prefetch.h): it must read every 16-byte word of the
// ranges it is given and nothing else, which its checksum (the XOR of every word read) shows
// against the XOR computed here over random data: ranges of odd lengths and starts (only whole
// words inside count), several ranges in one dispatch, and a range longer than the dispatch's
// threads cover in one pass (the grid-stride loop). Then what record() takes of a matrix: the
// leading rows of a Q4_0 matrix's quants and scales (the split-block layout of device_matrix.h)
// and of an F16 matrix's rows, the same fraction of each matrix when the budget is short.
#include <gtest/gtest.h>

#include <cstring>
#include <array>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "backend/vulkan/shader_push.h"
#include "backend/vulkan/weight_prefetch.h"
#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

// The XOR of the 32-bit words of the whole 16-byte words in [begin, begin + bytes) of `data`
// (offsets from the buffer's start, which is 16-byte aligned).
uint32_t xor_of_words(const std::vector<uint8_t>& data, uint64_t begin, uint64_t bytes) {
  const uint64_t first = (begin + 15) / 16 * 16, end = (begin + bytes) / 16 * 16;
  uint32_t folded = 0;
  for (uint64_t i = first; i + 4 <= end; i += 4) {
    uint32_t word = 0;
    std::memcpy(&word, &data[i], 4);
    folded ^= word;
  }
  return folded;
}

uint32_t checksum_of(GpuContext& gpu, const WeightPrefetch& prefetch) {
  std::vector<uint32_t> words(kPrefetchChecksumWords);
  gpu.transfer.download(prefetch.checksum(), 0, words.data(), words.size() * 4);
  uint32_t folded = 0;
  for (const uint32_t w : words) folded ^= w;
  return folded;
}

struct RandomBuffer {
  std::vector<uint8_t> bytes;
  std::unique_ptr<Buffer> buffer;
};

RandomBuffer random_buffer(GpuContext& gpu, uint64_t bytes, uint32_t seed) {
  RandomBuffer d;
  d.bytes.resize(bytes);
  std::mt19937 rng(seed);
  for (auto& b : d.bytes) b = static_cast<uint8_t>(rng());
  d.buffer = std::make_unique<Buffer>(gpu.device, bytes, MemoryUse::kDevice);
  gpu.transfer.upload(*d.buffer, 0, d.bytes.data(), bytes);
  return d;
}

uint32_t run_prefetch(GpuContext& gpu, const WeightPrefetch& prefetch, const std::function<void(CommandSequence&)>& f) {
  CommandSequence seq(gpu.device);
  seq.begin();
  f(seq);
  seq.end();
  seq.run();
  return checksum_of(gpu, prefetch);
}

TEST(VulkanWeightPrefetch, ReadsEveryWholeWordOfEachRange) {
  CHANNEL_GPU_CONTEXT(gpu);
  // 40 MiB: one range longer than 2048 workgroups x 256 threads x 4 loads x 16 bytes (32 MiB).
  const RandomBuffer data = random_buffer(*gpu, uint64_t{40} << 20, 1);
  struct Case {
    const char* name;
    std::vector<ByteRange> ranges;  // offsets into data
  };
  const std::vector<Case> cases = {
      {"one word", {{0, 16}}},
      {"odd start and length", {{5, 1000}}},
      {"shorter than a word inside", {{17, 20}}},
      {"six ranges", {{0, 4096}, {8192, 333}, {100000, 65536}, {7, 9}, {1 << 20, 3 << 20}, {(5 << 20) + 3, 77777}}},
      {"longer than one pass of the grid", {{16, (uint64_t{40} << 20) - 32}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WeightPrefetch prefetch(gpu->device, gpu->pipelines, 1);
    std::vector<ByteRange> ranges = c.ranges;
    uint32_t want = 0;
    for (ByteRange& r : ranges) {
      want ^= xor_of_words(data.bytes, r.address, r.bytes);
      r.address += data.buffer->address();
    }
    EXPECT_EQ(run_prefetch(*gpu, prefetch, [&](CommandSequence& seq) { prefetch.record_ranges(seq, ranges); }), want);
  }
}

TEST(VulkanWeightPrefetch, TakesTheLeadingRowsOfEachMatrixWithinTheBudget) {
  CHANNEL_GPU_CONTEXT(gpu);
  std::mt19937 rng(2);
  const TestMatrix gate = random_matrix(GgmlType::Q4_0, 96, 256, rng), up = random_matrix(GgmlType::Q4_0, 96, 256, rng);
  const TestMatrix rows = random_matrix(GgmlType::F16, 40, 200, rng);
  const uint64_t gate_bytes = device_matrix_bytes(GgmlType::Q4_0, 96, 256);
  const uint64_t up_offset = (gate_bytes + 255) / 256 * 256, rows_offset = up_offset + 8192;
  Buffer weights(gpu->device, rows_offset + device_matrix_bytes(GgmlType::F16, 40, 200), MemoryUse::kDevice);
  const DeviceMatrix g = upload_matrix(gpu->transfer, weights, 0, gate.w);
  const DeviceMatrix u = upload_matrix(gpu->transfer, weights, up_offset, up.w);
  const DeviceMatrix r = upload_matrix(gpu->transfer, weights, rows_offset, rows.w);
  std::vector<uint8_t> device_bytes(weights.size());
  gpu->transfer.download(weights, 0, device_bytes.data(), device_bytes.size());

  // Q4_0 split blocks: 96 rows of 8 blocks, 16 quant bytes each, then the f16 scales.
  const std::vector<ByteRange> q4 = leading_rows(g, 10);
  ASSERT_EQ(q4.size(), 2u);
  EXPECT_EQ(q4[0].address, g.data);
  EXPECT_EQ(q4[0].bytes, 10u * 8 * 16);
  EXPECT_EQ(q4[1].address, g.scales);
  EXPECT_EQ(q4[1].bytes, 10u * 8 * 2);
  const std::vector<ByteRange> f16 = leading_rows(r, 100);  // clamped to the 40 rows
  ASSERT_EQ(f16.size(), 1u);
  EXPECT_EQ(f16[0].address, r.data);
  EXPECT_EQ(f16[0].bytes, 40u * 400);

  // What one matrix's first n rows contribute to the checksum.
  const auto rows_xor = [&](const DeviceMatrix& m, int64_t n) {
    uint32_t folded = 0;
    for (const ByteRange& range : leading_rows(m, n)) {
      folded ^= xor_of_words(device_bytes, range.address - weights.address(), range.bytes);
    }
    return folded;
  };
  // A budget of half the two matrices' bytes takes 48 of each one's 96 rows.
  const uint64_t both = 2 * gate_bytes;
  WeightPrefetch half(gpu->device, gpu->pipelines, both / 2);
  EXPECT_EQ(run_prefetch(*gpu, half, [&](CommandSequence& seq) { half.record(seq, std::array<const DeviceMatrix*, 3>{&g, nullptr, &u}); }),
            rows_xor(g, 48) ^ rows_xor(u, 48));
  // A budget above their size takes them whole; no budget, nothing.
  WeightPrefetch whole(gpu->device, gpu->pipelines, 10 * both);
  EXPECT_EQ(run_prefetch(*gpu, whole, [&](CommandSequence& seq) { whole.record(seq, std::array{&g, &u, &r}); }),
            rows_xor(g, 96) ^ rows_xor(u, 96) ^ rows_xor(r, 40));
  WeightPrefetch none(gpu->device, gpu->pipelines, 0);
  EXPECT_EQ(run_prefetch(*gpu, none, [&](CommandSequence& seq) { none.record(seq, std::array{&g, &u}); }), 0u);
}

}  // namespace
}  // namespace channel::vulkan
