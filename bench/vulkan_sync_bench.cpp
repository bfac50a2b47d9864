// channel_vulkan_sync_bench: what waiting for the whole GPU costs, per round of a trivial
// dependent step (each workgroup reads what another wrote in the round before):
//   dispatches: one dispatch a round with a pipeline barrier between them, as a forward pass
//               separates its dependent stages today;
//   grid barrier: one dispatch of resident workgroups that wait for each other between rounds
//               (an atomic arrival count in device memory), the building block of a persistent
//               decode kernel.
// Decode runs ~8 dependent stages a layer (docs/benchmarks.md), so the difference between the two,
// times 8 x 48, is what a persistent kernel could save a token at most, before any overlap.
//
//   channel_vulkan_sync_bench [--gpu-device N] [--groups G]... [--workgroup W] [--rounds R] [--reps K]
//
// The grid barrier needs every workgroup resident at once (Vulkan promises no forward progress to
// a workgroup waiting for one that has not started): a workgroup that polls too long gives up and
// counts a failure, and the results are checked, so an over-large grid reports "not resident"
// instead of hanging or timing wrong work. On lavapipe (2 CPU threads) the grid barrier gives
// wrong values at times, without any workgroup giving up: a CPU driver is no place to time it,
// and what it means there is not settled; the bench is for GPUs (bench/device).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/pipeline.h"
#include "backend/vulkan/transfer.h"
#include "core/error.h"

namespace channel::vulkan {
namespace {

// shaders/grid_sync_bench.comp
struct SyncPush {
  uint64_t sync, data;
  uint32_t first_round, rounds, spin_limit, pad;
};
static_assert(sizeof(SyncPush) == 32);
constexpr uint32_t kSpinLimit = 1u << 24;

struct Outcome {
  double us_per_round = 0;
  bool correct = false;
  uint32_t failures = 0;  // workgroups that gave up waiting
};

// Best time over `reps` runs of `rounds` rounds on `groups` workgroups, one dispatch a round
// (persistent = false) or one dispatch in all.
Outcome time_rounds(Device& device, PipelineCache& pipelines, Transfer& transfer, uint32_t groups, uint32_t workgroup,
                    uint32_t rounds, int reps, bool persistent) {
  const uint64_t n = uint64_t{groups} * workgroup;
  std::vector<float> initial(2 * n, 0.0f);
  for (uint64_t i = 0; i < n; ++i) initial[i] = static_cast<float>(i);
  Buffer data(device, initial.size() * 4, MemoryUse::kDevice);
  Buffer sync(device, 16, MemoryUse::kDevice);
  const uint32_t specialization[] = {workgroup};
  const ComputePipeline& pipeline = pipelines.get("grid_sync_bench", specialization);

  CommandSequence seq(device);
  seq.begin();
  seq.fill(sync, 0, 16, 0);
  seq.barrier();
  seq.write_timestamp(0);
  if (persistent) {
    seq.dispatch(pipeline, SyncPush{sync.address(), data.address(), 0, rounds, kSpinLimit, 0}, groups);
  } else {
    for (uint32_t r = 0; r < rounds; ++r) {
      seq.dispatch(pipeline, SyncPush{sync.address(), data.address(), r, 1, kSpinLimit, 0}, groups);
      seq.barrier();
    }
  }
  seq.write_timestamp(1);
  seq.end();

  Outcome outcome;
  double best_ns = 1e300;
  for (int rep = 0; rep <= reps; ++rep) {  // the first run warms up
    transfer.upload(data, 0, initial.data(), initial.size() * 4);
    seq.run();
    const std::vector<double> ns = seq.timestamps_ns();
    if (rep > 0) best_ns = std::min(best_ns, ns[1] - ns[0]);
  }
  std::vector<float> result(n);
  transfer.download(data, (rounds % 2) * n * 4, result.data(), n * 4);
  uint32_t counters[4];
  transfer.download(sync, 0, counters, 16);
  outcome.failures = counters[2];
  outcome.correct = true;
  for (uint64_t i = 0; i < n; ++i) {
    const float expected = static_cast<float>((i + uint64_t{rounds} * workgroup) % n) + static_cast<float>(rounds);
    if (result[i] != expected) outcome.correct = false;
  }
  outcome.us_per_round = best_ns / rounds / 1e3;
  return outcome;
}

int run(int argc, char** argv) {
  CLI::App app{"Vulkan: a barrier between dispatches against a grid barrier inside one (us per round)"};
  int device_index = -1;
  std::vector<uint32_t> groups_list = {132, 264, 528};
  uint32_t workgroup = 256;
  uint32_t rounds = 384;  // 8 stages x 48 layers: one decode token's dependent steps
  int reps = 5;
  app.add_option("--gpu-device", device_index, "device index (channel gpu list); default: the best");
  app.add_option("--groups", groups_list, "workgroups in the grid (repeatable; default 132 264 528: 1, 2 and 4 "
                                          "an SM of an H100 / H200)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--workgroup", workgroup, "invocations a workgroup")->check(CLI::Range(32, 1024));
  app.add_option("--rounds", rounds, "dependent rounds timed together")->check(CLI::Range(1, 1 << 20));
  app.add_option("--reps", reps, "timed runs (the best is kept)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  Device device(device_index >= 0 ? std::optional<uint32_t>(device_index) : std::nullopt);
  PipelineCache pipelines(device);
  Transfer transfer(device);
  fmt::print("device: {}; {} rounds, workgroups of {}\n", device.info().name, rounds, workgroup);
  fmt::print("{:>7}  {:>22}  {:>22}\n", "groups", "dispatches: us/round", "grid barrier: us/round");
  for (const uint32_t groups : groups_list) {
    const auto describe = [](const Outcome& o) {
      if (o.failures != 0) return fmt::format("not resident ({} gave up)", o.failures);
      return o.correct ? fmt::format("{:.2f}", o.us_per_round) : std::string("WRONG VALUES");
    };
    const Outcome dispatches = time_rounds(device, pipelines, transfer, groups, workgroup, rounds, reps, false);
    const Outcome grid = time_rounds(device, pipelines, transfer, groups, workgroup, rounds, reps, true);
    fmt::print("{:>7}  {:>22}  {:>22}\n", groups, describe(dispatches), describe(grid));
  }
  return 0;
}

}  // namespace
}  // namespace channel::vulkan

int main(int argc, char** argv) {
  try {
    return channel::vulkan::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
