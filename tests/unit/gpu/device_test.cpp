// Device listing, selection and the errors without a driver.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "backend/vulkan/device_info.h"
#include "gpu_test_support.h"

namespace channel::vulkan {
namespace {

TEST(VulkanDevices, ListsLavapipeWithItsFields) {
  CHANNEL_GPU_CONTEXT(gpu);
  const std::vector<DeviceInfo> devices = list_devices();
  ASSERT_FALSE(devices.empty());
  for (uint32_t i = 0; i < devices.size(); ++i) EXPECT_EQ(devices[i].index, i);
  const DeviceInfo* lavapipe = nullptr;
  for (const DeviceInfo& d : devices) {
    if (d.name.find("llvmpipe") != std::string::npos) lavapipe = &d;
  }
  // Where lavapipe is the only driver (CI) and is missing, CHANNEL_GPU_CONTEXT has already failed
  // for want of any device; on a machine with a GPU driver only, there is nothing to check here.
  if (lavapipe == nullptr) GTEST_SKIP() << "lavapipe (mesa-vulkan-drivers) is not installed";
  const DeviceInfo& d = *lavapipe;
  EXPECT_EQ(d.type, DeviceType::kCpu);
  EXPECT_EQ(device_type_name(d.type), "cpu");
  EXPECT_GE(d.api_version, VK_API_VERSION_1_2);
  EXPECT_NE(d.driver.find("llvmpipe"), std::string::npos) << d.driver;
  EXPECT_GT(d.device_local_bytes, 0u);
  EXPECT_TRUE(d.unified_memory);
  // Subgroups as wide as the CPU's vectors: 4 (SSE), 8 (AVX2), 16 (AVX-512).
  EXPECT_TRUE(d.subgroup_size == 4 || d.subgroup_size == 8 || d.subgroup_size == 16) << d.subgroup_size;
  EXPECT_LE(d.min_subgroup_size, d.subgroup_size);
  EXPECT_GE(d.max_subgroup_size, d.subgroup_size);
  EXPECT_EQ(d.max_storage_buffer_range, 128u << 20);
  EXPECT_GT(d.max_memory_allocation_size, d.max_storage_buffer_range);
  EXPECT_GE(d.max_compute_shared_memory, 16u * 1024);
  EXPECT_GE(d.max_workgroup_count[0], 65535u);
  EXPECT_GE(d.max_push_constants, 128u);
  EXPECT_TRUE(d.features.buffer_device_address);
  EXPECT_TRUE(d.features.storage_buffer_16bit);
  EXPECT_TRUE(d.features.shader_int64);
  EXPECT_TRUE(d.features.subgroup_arithmetic);
  EXPECT_TRUE(d.features.subgroup_shuffle);
  EXPECT_TRUE(d.features.shader_float16);
  EXPECT_TRUE(d.features.storage_buffer_8bit);
  EXPECT_TRUE(d.features.shader_int8);
  EXPECT_TRUE(d.features.integer_dot_product);            // offered by Mesa 22.3 lavapipe ...
  EXPECT_FALSE(d.features.integer_dot_4x8_accelerated);   // ... without hardware behind it
  EXPECT_FALSE(d.features.cooperative_matrix);
  EXPECT_TRUE(d.usable()) << (d.missing.empty() ? "" : d.missing.front());
}

TEST(VulkanDevices, DefaultPrefersDiscreteThenIntegratedThenVirtualThenCpu) {
  auto device = [](uint32_t index, DeviceType type, bool usable) {
    DeviceInfo d;
    d.index = index;
    d.type = type;
    if (!usable) d.missing.push_back("bufferDeviceAddress");
    return d;
  };
  EXPECT_EQ(default_device_index({device(0, DeviceType::kCpu, true), device(1, DeviceType::kIntegrated, true),
                                  device(2, DeviceType::kDiscrete, true)}),
            2u);
  EXPECT_EQ(default_device_index({device(0, DeviceType::kCpu, true), device(1, DeviceType::kVirtual, true)}), 1u);
  EXPECT_EQ(default_device_index({device(0, DeviceType::kDiscrete, false), device(1, DeviceType::kCpu, true)}), 1u);
  EXPECT_EQ(default_device_index({device(0, DeviceType::kIntegrated, true), device(1, DeviceType::kIntegrated, true)}),
            0u);
  EXPECT_EQ(default_device_index({device(0, DeviceType::kDiscrete, false)}), std::nullopt);
}

TEST(VulkanDevices, OpensTheDefaultDeviceAndRefusesAMissingIndex) {
  CHANNEL_GPU_CONTEXT(gpu);
  const std::vector<DeviceInfo> devices = list_devices();
  EXPECT_EQ(gpu->device.info().index, default_device_index(devices));
  try {
    Device missing(static_cast<uint32_t>(devices.size()));
    ADD_FAILURE() << "opened a device that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Vulkan device"), std::string::npos) << e.what();
  }
}

// Without any driver the loader's instance creation fails: one line naming what was looked for
// and how to get it. In a child process, whose environment points the loader at no driver.
TEST(VulkanDevicesDeathTest, NoDriverIsOneActionableError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("VK_ICD_FILENAMES", "/nonexistent/channel-test-icd.json", 1);
        setenv("VK_DRIVER_FILES", "/nonexistent/channel-test-icd.json", 1);
        try {
          list_devices();
        } catch (const Error& e) {
          std::fprintf(stderr, "<<%s>>\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "<<no Vulkan (driver|loader|device)[^\n]*mesa-vulkan-drivers[^\n]*>>");
}

}  // namespace
}  // namespace channel::vulkan
