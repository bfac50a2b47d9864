// Buffers, transfers and replayed command sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backend/vulkan/shader_push.h"
#include "gpu_test_support.h"

namespace channel::vulkan {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(VulkanBuffers, HaveAddressesAndMapUnifiedMemory) {
  CHANNEL_GPU_CONTEXT(gpu);
  const Buffer a(gpu->device, 1000, MemoryUse::kDevice);
  const Buffer b(gpu->device, 1000, MemoryUse::kDevice);
  EXPECT_NE(a.address(), 0u);
  EXPECT_NE(a.address(), b.address());
  EXPECT_EQ(a.address() % 16, 0u);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_EQ(a.host_visible(), gpu->device.info().unified_memory);
  EXPECT_TRUE(Buffer(gpu->device, 64, MemoryUse::kUpload).host_visible());
  EXPECT_TRUE(Buffer(gpu->device, 64, MemoryUse::kReadback).host_visible());
  EXPECT_FALSE(Buffer(gpu->device, 64, MemoryUse::kDevice, HostMapping::kNever).host_visible());
}

TEST(VulkanBuffers, RefusesMoreThanOneAllocationCanHold) {
  CHANNEL_GPU_CONTEXT(gpu);
  const uint64_t too_large = gpu->device.info().max_memory_allocation_size + 4096;
  try {
    Buffer buffer(gpu->device, too_large, MemoryUse::kDevice);
    ADD_FAILURE() << "allocated " << too_large << " bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxMemoryAllocationSize"), std::string::npos) << e.what();
  }
}

// Mapped (unified memory) and staged (as on a discrete GPU) buffers, at odd offsets, through a
// staging buffer smaller than the data so that copies go in several chunks.
TEST(VulkanTransfer, RoundTripsMappedAndStagedBuffers) {
  CHANNEL_GPU_CONTEXT(gpu);
  Transfer transfer(gpu->device, 1 << 20);
  for (const HostMapping mapping : {HostMapping::kWherePossible, HostMapping::kNever}) {
    SCOPED_TRACE(mapping == HostMapping::kNever ? "staged" : "mapped where possible");
    const size_t size = (7 << 19) + 13;  // 3.5 MiB + 13 bytes
    const Buffer buffer(gpu->device, size + 8, MemoryUse::kDevice, mapping);
    const std::vector<uint8_t> data = random_bytes(size, 1);
    transfer.upload(buffer, 3, data.data(), data.size());
    std::vector<uint8_t> back(size);
    transfer.download(buffer, 3, back.data(), back.size());
    EXPECT_EQ(back, data);
    std::vector<uint8_t> middle(100);
    transfer.download(buffer, 3 + 2'000'000, middle.data(), middle.size());
    EXPECT_TRUE(std::equal(middle.begin(), middle.end(), data.begin() + 2'000'000));
  }
}

TEST(VulkanTransfer, RefusesRangesOutsideTheBuffer) {
  CHANNEL_GPU_CONTEXT(gpu);
  const Buffer buffer(gpu->device, 100, MemoryUse::kDevice);
  std::vector<uint8_t> data(64);
  EXPECT_THROW(gpu->transfer.upload(buffer, 40, data.data(), data.size()), Error);
  EXPECT_THROW(gpu->transfer.download(buffer, 101, data.data(), 0), Error);
}

// A sequence recorded once and submitted again reads the buffers' contents at each submission.
TEST(VulkanCommandSequence, ReplaysWithoutRecordingAgain) {
  CHANNEL_GPU_CONTEXT(gpu);
  const size_t n = 4096;
  const Buffer src(gpu->device, n, MemoryUse::kDevice, HostMapping::kNever);
  const Buffer dst(gpu->device, n + 64, MemoryUse::kDevice, HostMapping::kNever);
  CommandSequence seq(gpu->device);
  seq.begin();
  seq.fill(dst, 0, n + 64, 0xdeadbeefu);
  seq.barrier();
  seq.copy(src, 0, dst, 32, n);
  seq.end();
  EXPECT_TRUE(seq.recorded());
  for (uint32_t round = 0; round < 3; ++round) {
    const std::vector<uint8_t> data = random_bytes(n, 10 + round);
    gpu->transfer.upload(src, 0, data.data(), n);
    seq.submit();
    EXPECT_TRUE(seq.pending());
    seq.wait();
    EXPECT_FALSE(seq.pending());
    std::vector<uint8_t> back(n + 64);
    gpu->transfer.download(dst, 0, back.data(), back.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + 32)) << "round " << round;
    for (size_t i : {size_t{0}, size_t{31}, n + 32, n + 63}) EXPECT_EQ(back[i], (0xdeadbeefu >> (8 * (i % 4))) & 0xff);
  }
}

// A recorded indirect dispatch runs as many workgroups as its buffer says at each replay (none
// included), so counts that change between steps need no new recording.
TEST(VulkanCommandSequence, IndirectDispatchReadsItsWorkgroupCountsAtEachReplay) {
  CHANNEL_GPU_CONTEXT(gpu);
  constexpr uint32_t kWorkgroup = 64, kGroups = 4, n = kWorkgroup * kGroups;
  const Buffer values(gpu->device, n * 4, MemoryUse::kDevice);
  Buffer args(gpu->device, 16, MemoryUse::kUpload);
  const uint32_t spec[] = {kWorkgroup};
  CommandSequence seq(gpu->device);
  seq.begin();
  seq.dispatch_indirect(gpu->pipelines.get("softcap", spec), SoftcapPush{values.address(), n, 1.0f, 1.0f, 0}, args, 4);
  seq.end();
  EXPECT_THROW(
      {
        CommandSequence outside(gpu->device);
        outside.begin();
        outside.dispatch_indirect(gpu->pipelines.get("softcap", spec), SoftcapPush{}, args, 8);  // past the end
      },
      Error);
  for (const uint32_t groups : {2u, 4u, 0u, 1u}) {
    const std::vector<float> fours(n, 4.0f);
    gpu->transfer.upload(values, 0, fours.data(), n * 4);
    const uint32_t command[3] = {groups, 1, 1};
    std::memcpy(args.mapped() + 4, command, sizeof(command));
    seq.run();
    std::vector<float> back(n);
    gpu->transfer.download(values, 0, back.data(), n * 4);
    const auto changed = std::count_if(back.begin(), back.end(), [](float v) { return v != 4.0f; });
    EXPECT_EQ(changed, groups * kWorkgroup) << groups << " workgroups";
    EXPECT_NEAR(back[0], groups == 0 ? 4.0f : std::tanh(4.0f), 1e-6f);
  }
}

TEST(VulkanCommandSequence, TimestampsMeasureTheWorkBetweenThem) {
  CHANNEL_GPU_CONTEXT(gpu);
  if (gpu->device.timestamp_valid_bits() == 0) GTEST_SKIP() << "no timestamps on this queue";
  const Buffer buffer(gpu->device, 64 << 20, MemoryUse::kDevice);
  CommandSequence seq(gpu->device);
  seq.begin();
  seq.write_timestamp(0);
  seq.fill(buffer, 0, buffer.size(), 0);
  seq.write_timestamp(2);
  seq.end();
  EXPECT_THROW(seq.timestamps_ns(), Error);  // not run yet
  for (int round = 0; round < 2; ++round) {  // a replay writes them again
    seq.run();
    const std::vector<double> ns = seq.timestamps_ns();
    ASSERT_EQ(ns.size(), 3u);
    EXPECT_TRUE(std::isnan(ns[1]));
    EXPECT_GT(ns[2], ns[0]) << "round " << round;
    EXPECT_LT(ns[2] - ns[0], 60e9);
  }
}

TEST(VulkanCommandSequence, RefusesMisuse) {
  CHANNEL_GPU_CONTEXT(gpu);
  CommandSequence seq(gpu->device);
  EXPECT_THROW(seq.submit(), Error);  // nothing recorded
  const Buffer buffer(gpu->device, 64, MemoryUse::kDevice);
  EXPECT_THROW(seq.fill(buffer, 0, 64, 0), Error);  // not recording
  seq.begin();
  seq.end();
  seq.run();  // an empty sequence is fine
}

}  // namespace
}  // namespace channel::vulkan
