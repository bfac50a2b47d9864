// Shared by the Vulkan tests: one device per test process, and the rule for machines without
// one: the tests skip, naming why, unless CHANNEL_REQUIRE_VULKAN=1 (scripts/test.sh, CI with
// lavapipe) makes that a failure.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/pipeline.h"
#include "backend/vulkan/transfer.h"
#include "core/error.h"
#include "vulkan_required.h"

namespace channel::vulkan::testing {

using channel::testing::vulkan_required;

struct GpuContext {
  Device device;
  PipelineCache pipelines{device};
  Transfer transfer{device};
};

inline std::unique_ptr<GpuContext>& gpu_context_slot() {
  static std::unique_ptr<GpuContext> context;
  return context;
}

// The process's context (made on first use), or nullptr with the reason in `why`.
inline GpuContext* gpu_context(std::string& why) {
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      gpu_context_slot() = std::make_unique<GpuContext>();
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  why = failure;
  return gpu_context_slot().get();
}

// The device comes before the first test and goes when the tests are done. Made first, it keeps
// the driver loaded while tests create and destroy backends (each with its own instance): on an
// H100, with the tests of VulkanBackend.* run first (a gtest filter) and this context made only
// after them, its vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER once ~17 backends
// had come and gone, while every run that made it first passed. Released before exit() runs
// static destructors: on the H200 the test process ended with SIGSEGV after all tests had passed
// while this context was still alive at exit (after the driver's own exit handlers may have run).
class GpuContextLifetime : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string unavailable;  // each test that needs the context reports it
    gpu_context(unavailable);
  }
  void TearDown() override { gpu_context_slot().reset(); }
};
inline ::testing::Environment* const kGpuContextLifetime =
    ::testing::AddGlobalTestEnvironment(new GpuContextLifetime);

}  // namespace channel::vulkan::testing

// Declares `GpuContext* name` or ends the test: skipped without a usable Vulkan device, failed
// instead when CHANNEL_REQUIRE_VULKAN=1.
#define CHANNEL_GPU_CONTEXT(name)                                                                    \
  std::string name##_unavailable;                                                                    \
  ::channel::vulkan::testing::GpuContext* name = ::channel::vulkan::testing::gpu_context(name##_unavailable); \
  if (name == nullptr) {                                                                             \
    if (::channel::vulkan::testing::vulkan_required()) {                                             \
      FAIL() << "no usable Vulkan device (CHANNEL_REQUIRE_VULKAN=1): " << name##_unavailable;        \
    } else {                                                                                         \
      GTEST_SKIP() << "no usable Vulkan device: " << name##_unavailable;                             \
    }                                                                                                \
  }
