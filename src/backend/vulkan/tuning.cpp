#include "backend/vulkan/tuning.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "backend/vulkan/shaders/shared_memory.glsl"
#include "core/error.h"

namespace channel::vulkan {
namespace {

// The comma-separated unsigned numbers of `text`, from min_count to max_count of them; nothing
// when the text is anything else (a sign, a space, an empty field, a number past 32 bits).
std::optional<std::vector<uint32_t>> parse_numbers(std::string_view text, size_t min_count, size_t max_count) {
  std::vector<uint32_t> numbers;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    uint32_t value = 0;
    const char* first = text.data() + start;
    const char* last = text.data() + comma;
    const auto [end, error] = std::from_chars(first, last, value);
    if (first == last || error != std::errc() || end != last) return std::nullopt;
    numbers.push_back(value);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  if (numbers.size() < min_count || numbers.size() > max_count) return std::nullopt;
  return numbers;
}

[[noreturn]] void bad_setting(std::string_view name, std::string_view meaning, std::string_view text) {
  fail("{} must be {}, not '{}'", name, meaning, text);
}

// The numbers of environment variable `name`, or nothing where it is unset; a value that is not
// min_count to max_count numbers fails, naming the variable and `meaning`.
std::optional<std::vector<uint32_t>> env_numbers(const char* name, size_t min_count, size_t max_count,
                                                 std::string_view meaning) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  auto numbers = parse_numbers(text, min_count, max_count);
  if (!numbers) bad_setting(name, meaning, text);
  return numbers;
}

// One number of environment variable `name` for which `valid` holds, or nothing where it is
// unset; any other value fails, naming the variable and `meaning`.
template <typename Valid>
std::optional<uint32_t> env_number(const char* name, std::string_view meaning, Valid valid) {
  const auto numbers = env_numbers(name, 1, 1, meaning);
  if (!numbers) return std::nullopt;
  if (!valid((*numbers)[0])) bad_setting(name, meaning, std::getenv(name));
  return (*numbers)[0];
}

auto in_range(uint32_t low, uint32_t high) {
  return [=](uint32_t value) { return value >= low && value <= high; };
}

// Setting `name` as 1 (on) or 0 (off), `unset` where it is not set; any other value fails.
bool env_switch(const char* name, bool unset) {
  return env_number(name, "1 (on) or 0 (off)", in_range(0, 1)).value_or(unset ? 1 : 0) == 1;
}

// Bytes of weights each prefetch reads (weight_prefetch.h) on a discrete GPU; none on other
// devices, whose caches are small or the CPU's. On an H100 (Gemma 3 12B, `channel bench --gpu -p
// 512 -n 64 -r 3`, two calls, decode tok/s at depth 0 by round): 0 MiB 148.0 / 147.6 and 145.8 /
// 138.2, 6 MiB 146.9 / 143.7, 9 MiB 152.1 / 151.7, 12 MiB 153.8 / 151.8 and 151.5 / 154.7, 16 MiB
// 152.5 / 151.8, 24 MiB 143.6 / 147.0, 48 MiB 139.7 / 139.5: a prefetch longer than the stage it
// hides in holds up the barrier after it for more than the product then saves.
constexpr uint64_t kDiscretePrefetchBytes = uint64_t{12} << 20;

}  // namespace

bool diagnostic_switch(const char* name) { return env_switch(name, false); }

// A CPU driver (lavapipe) pays per invocation, so its matrix-vector workgroups are one subgroup
// wide and cover many rows (on a 128-wide embedding the default shape left 124 of 128 invocations
// idle: decode 0.3 tok/s against 11 with this shape).
MatmulKernels::Options matmul_options(const DeviceInfo& info) {
  MatmulKernels::Options options;
  if (info.type == DeviceType::kCpu) {
    options.matvec_workgroup = std::max(8u, info.subgroup_size);
    options.gated_workgroup = options.matvec_workgroup;
    options.matvec_split = 1;  // one subgroup a workgroup: nothing to share a row with
    options.matvec_rows = 64;
    options.matvec_q_rows = 64;
  }
  if (const char* shape = std::getenv("CHANNEL_VULKAN_MATVEC")) {
    parse_matvec_shape("CHANNEL_VULKAN_MATVEC", shape, options);
  }
  if (const auto tiled = env_numbers("CHANNEL_VULKAN_MATMUL", 2, 2, "rows_per_thread,k_blocks (e.g. 8,4)")) {
    options.tiled_rows_per_thread = (*tiled)[0];
    options.tiled_k_blocks = (*tiled)[1];
  }
  // MatmulKernels checks the threads against the device.
  if (const auto threads = env_number("CHANNEL_VULKAN_GATED_WORKGROUP",
                                      "the gated matrix-vector kernel's threads per workgroup",
                                      in_range(1, UINT32_MAX))) {
    options.gated_workgroup = *threads;
  }
  if (const auto tokens = env_number("CHANNEL_VULKAN_MATVEC_MAX_TOKENS",
                                     "the most tokens a matrix-vector product takes (1 or more)",
                                     in_range(1, UINT32_MAX))) {
    options.matvec_max_tokens = *tokens;
  }
  options.head_inputs = env_switch("CHANNEL_VULKAN_HEAD_INPUTS", options.head_inputs);
  if (const auto coop = env_numbers("CHANNEL_VULKAN_COOPMAT", 1, 4,
                                    "the blocks per step[,tile rows[,small batches' tile rows[,their most tokens]]] "
                                    "(e.g. 4,128,64,256), or 0 for no cooperative matrices")) {
    options.cooperative_matrix = (*coop)[0] != 0;
    if ((*coop)[0] != 0) options.cooperative_k_blocks = (*coop)[0];
    if (coop->size() >= 2) options.cooperative_tile_rows = (*coop)[1];
    if (coop->size() >= 3) options.cooperative_small_batch_tile_rows = (*coop)[2];
    if (coop->size() == 4) options.cooperative_small_batch_tokens = (*coop)[3];
  }
  return options;
}

void parse_matvec_shape(std::string_view what, const std::string& text, MatmulKernels::Options& options) {
  const auto shape = parse_numbers(text, 3, 5);
  if (!shape) bad_setting(what, "threads,rows,subgroup_rows[,blocks[,split]] (e.g. 128,8,2,4 or 128,8,2,2,2)", text);
  options.matvec_workgroup = (*shape)[0];
  options.matvec_rows = options.matvec_q_rows = (*shape)[1];
  options.matvec_subgroup_rows = (*shape)[2];
  if (shape->size() > 3) options.matvec_q_blocks = (*shape)[3];
  if (shape->size() > 4) options.matvec_split = (*shape)[4];
}

// 16 tokens where the workgroup's shared memory allows (queries of max_head_dim + 4 floats, a
// 64-cell tile of scores, the Q8_0 staging of one head), else the most that fit.
uint32_t tiled_attention_tokens(const DeviceInfo& info, uint32_t max_head_dim) {
  const auto shared_bytes = [&](uint32_t tokens) { return 4u * SHARED_ATTENTION_WORDS(tokens, max_head_dim); };
  const std::string meaning = fmt::format(
      "1 to 64 tokens whose queries fit this device's {} bytes of shared memory", info.max_compute_shared_memory);
  const auto fits = [&](uint32_t tokens) {
    return tokens >= 1 && tokens <= 64 && shared_bytes(tokens) <= info.max_compute_shared_memory;
  };
  if (const auto tokens = env_number("CHANNEL_VULKAN_ATTENTION_TOKENS", meaning, fits)) return *tokens;
  uint32_t tokens = 16;
  while (tokens > 1 && shared_bytes(tokens) > info.max_compute_shared_memory) tokens /= 2;
  return tokens;
}

// One workgroup per row: at decode the only workgroup of its dispatch, so a GPU gives it as many
// invocations as it allows, up to 1024 (fewer values each, a shorter chain of loads: on the H200,
// Gemma 3 12B decode ran at 106 / 124 / 134 tok/s with 256 / 512 / 1024); a CPU driver pays per
// invocation.
uint32_t norm_quantize_workgroup(const DeviceInfo& info, uint32_t cpu_workgroup) {
  const std::string meaning =
      fmt::format("a multiple of 32 up to {} on this device", info.max_workgroup_invocations);
  const auto possible = [&](uint32_t workgroup) {
    return workgroup >= 32 && workgroup % 32 == 0 && workgroup <= info.max_workgroup_invocations;
  };
  if (const auto workgroup = env_number("CHANNEL_VULKAN_NORM_WORKGROUP", meaning, possible)) return *workgroup;
  if (info.type == DeviceType::kCpu) return cpu_workgroup;
  return std::min(1024u, info.max_workgroup_invocations);
}

// Each chunk's online softmax is a serial chain (its keys in batches of 16 by default, one load
// latency a batch) and the merge a step a chunk, so a chunk's length trades one against the other.
// H100, Gemma 3 12B, decode with the ring full (`channel bench --gpu -p 512 -n 64 -r 3`, one call,
// two rounds): 16 keys 136.2 / 136.9 tok/s, 32 keys 139.3 / 139.6 and 139.7 / 140.4, 48 keys 133.2
// / 133.5, 64 keys 127.1 / 126.1. With 32, the F32 gemma4e model of the long-decode parity test
// (480-token prompt, 64 greedy tokens) leaves llama.cpp's greedy tokens at token 59, a near tie
// (llama.cpp's two candidates 4.9e-5 of the row's RMS apart) that the greedy comparison accepts.
// Every device type takes the same length, so that lavapipe's tests run the chunks a GPU runs.
uint32_t split_kv_chunk_keys(uint32_t max_keys) {
  const std::string meaning = fmt::format("a multiple of 16 from 16 to {}", max_keys);
  const auto possible = [&](uint32_t keys) { return keys >= 16 && keys % 16 == 0 && keys <= max_keys; };
  if (const auto keys = env_number("CHANNEL_VULKAN_SPLIT_KV_KEYS", meaning, possible)) return *keys;
  return 32;
}

// Each group of 64 invocations merges a run of n_chunks / groups chunks, then the groups' merges
// are merged in order: more groups, a shorter first chain and a longer second one (a global
// layer with the ring full has 124 chunks a head). The setting exists to measure that trade: on
// an H100 eight groups (512) decoded no faster than four with the ring full (twenty-ninth session,
// docs/benchmarks.md), so four stay the default.
constexpr uint32_t kCombineWorkgroup = 256;

uint32_t combine_workgroup(const DeviceInfo& info, uint32_t max_chunks) {
  const std::string meaning = fmt::format(
      "a multiple of 64 up to {} whose groups' values fit this device's {} bytes of shared memory",
      info.max_workgroup_invocations, info.max_compute_shared_memory);
  constexpr uint32_t kGroupLanes = SHARED_COMBINE_SLICE_DIMS;  // a group's invocation per dim of the slice
  const auto fits = [&](uint32_t workgroup) {
    return workgroup >= kGroupLanes && workgroup % kGroupLanes == 0 && workgroup <= info.max_workgroup_invocations &&
           4u * SHARED_COMBINE_WORDS(workgroup / kGroupLanes, max_chunks) <= info.max_compute_shared_memory;
  };
  if (const auto workgroup = env_number("CHANNEL_VULKAN_COMBINE_WORKGROUP", meaning, fits)) return *workgroup;
  return kCombineWorkgroup;
}

// One-row decode (a workgroup per head at decode) waits on its batches' chains, so it takes 32
// keys a batch on 256 invocations where they fit; split-KV chunks (32 keys) keep 16 on 128, whose
// many small workgroups share the GPU better. H100, Gemma 3 12B, `channel bench --gpu -p 16 -n 64
// -r 3`, two rounds, one shape for both schemes (batch,groups): 16,2 decode at depth 0 164.2 /
// 164.0 tok/s and ring full 143.7 / 144.0; 32,4 171.1 / 171.1 and 131.3 / 131.6; 48,4 171.6 /
// 171.4 and 129.6 / 129.4; 32,2 165.6 / 165.5 and 126.4 / 126.3; 16,1 150.8 / 150.5 and 132.9 /
// 132.9. The two shapes together (32,4 one-row, 16,2 split), next call: 168.3 / 168.8 and 141.4 /
// 142.1, against 16,2 for both 162.6 / 161.5 and 142.4 / 142.9. A shape must give each group
// whole keys, each key an invocation for its per-key sums, and fit the device's workgroup and
// shared memory.
AttentionRowsShapes attention_rows_shapes(const DeviceInfo& info, uint32_t max_head_dim) {
  const auto fits = [&](const AttentionRowsShape& shape) {
    return shape.groups >= 1 && shape.groups * 64u <= info.max_workgroup_invocations &&
           shape.key_batch >= shape.groups && shape.key_batch % shape.groups == 0 &&
           shape.key_batch <= 64u * shape.groups &&
           4u * SHARED_ROWS_WORDS(shape.key_batch, max_head_dim) <= info.max_compute_shared_memory;
  };
  AttentionRowsShapes shapes;
  if (const auto numbers = env_numbers("CHANNEL_VULKAN_ATTENTION_ROWS", 2, 4,
                                       "batch,groups[,split_batch,split_groups] (e.g. 32,4,16,2)")) {
    shapes.one_row = {(*numbers)[0], (*numbers)[1]};
    shapes.split = numbers->size() == 4 ? AttentionRowsShape{(*numbers)[2], (*numbers)[3]} : shapes.one_row;
    if (numbers->size() == 3 || !fits(shapes.one_row) || !fits(shapes.split)) {
      bad_setting("CHANNEL_VULKAN_ATTENTION_ROWS",
                  fmt::format("batch,groups or batch,groups,split_batch,split_groups, each with 64 x groups "
                              "invocations (at most {}), a batch of whole keys per group up to 64 x groups, and the "
                              "batch's shared memory within {} bytes",
                              info.max_workgroup_invocations, info.max_compute_shared_memory),
                  std::getenv("CHANNEL_VULKAN_ATTENTION_ROWS"));
    }
    return shapes;
  }
  if (const AttentionRowsShape larger{32, 4}; fits(larger)) shapes.one_row = larger;
  return shapes;
}

std::array<uint32_t, 5> attention_rows_constants(const AttentionRowsShape& shape, uint32_t max_head_dim, bool split) {
  return {max_head_dim + max_head_dim % 2, shape.key_batch, shape.groups, 64 * shape.groups, split ? 1u : 0u};
}

uint64_t prefetch_budget_bytes(const DeviceInfo& info, std::optional<uint64_t> option) {
  if (option) return *option;
  if (const auto mib = env_number("CHANNEL_VULKAN_PREFETCH_MB",
                                  "the MiB of weights a prefetch reads (0 to 4096; 0: none)", in_range(0, 4096))) {
    return uint64_t{*mib} << 20;
  }
  return info.type == DeviceType::kDiscrete ? kDiscretePrefetchBytes : 0;
}

}  // namespace channel::vulkan
