// channel_vulkan_matvec_bench: the Vulkan matrix-vector kernels (one decode token) on the weight
// matrices of a Gemma 3 12B token, in GB/s of weight bytes against the device's bandwidth.
//
//   channel_vulkan_matvec_bench [--gpu-device N] [--shape threads,rows,subgroup_rows[,blocks]]... [--reps R]
//                               [--matrix NAME]...
//
// Each matrix (Q, K, V, O, gate, up, down in Q4_0 at 3840 x 15360 FFN, and the 262144-row Q8_0
// output) is allocated in enough copies to exceed the GPU's last-level cache (256 MiB at least),
// so every product streams its weights from memory, as decode does. One recorded sequence runs
// 64 products cycling through the copies, with a barrier between products (as in a forward pass,
// where each product's output is the next one's input); GPU timestamps around it give the time
// per product. Reported per shape: microseconds and GB/s per matrix, and the matrix-vector time
// of a whole token (48 layers + the output) with the tok/s it alone would allow.
// Random weights: random quant bytes with finite f16 scales; random activations. Every matrix
// is uploaded once and timed with each --shape in turn.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/device_matrix.h"
#include "backend/vulkan/matmul_kernels.h"
#include "backend/vulkan/tuning.h"
#include "backend/vulkan/pipeline.h"
#include "backend/vulkan/transfer.h"
#include "core/error.h"

namespace channel::vulkan {
namespace {

constexpr uint64_t kColdBytes = 256ull << 20;  // beyond the H200's 50 MiB L2 (and any GPU's)
constexpr int kProducts = 64;                  // products per timed sequence
constexpr int kLayers = 48;                    // Gemma 3 12B

struct MatrixShape {
  const char* name;
  GgmlType type;
  int64_t rows, cols;
  int per_token;  // times it is read per decoded token
};
constexpr MatrixShape kShapes[] = {
    {"attn_q", GgmlType::Q4_0, 4096, 3840, kLayers},   {"attn_k", GgmlType::Q4_0, 2048, 3840, kLayers},
    {"attn_v", GgmlType::Q4_0, 2048, 3840, kLayers},   {"attn_output", GgmlType::Q4_0, 3840, 4096, kLayers},
    {"ffn_gate", GgmlType::Q4_0, 15360, 3840, kLayers}, {"ffn_up", GgmlType::Q4_0, 15360, 3840, kLayers},
    {"ffn_down", GgmlType::Q4_0, 3840, 15360, kLayers}, {"output", GgmlType::Q8_0, 262144, 3840, 1},
};

// A GGUF-encoded random matrix (random quant bytes, finite f16 scales around 2^-7).
std::vector<uint8_t> random_gguf(const MatrixShape& shape, std::mt19937_64& rng) {
  std::vector<uint8_t> bytes(ggml_row_bytes(shape.type, shape.cols) * shape.rows);
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    const uint64_t word = rng();
    std::memcpy(&bytes[i], &word, 8);
  }
  const size_t block = ggml_type_traits(shape.type).block_bytes;
  for (size_t offset = 0; offset < bytes.size(); offset += block) {
    const uint16_t scale = static_cast<uint16_t>(0x2000 | (rng() & 0x3ff));
    std::memcpy(&bytes[offset], &scale, 2);
  }
  return bytes;
}

// Copies of one matrix on the device (together beyond the caches) and a random activation vector.
struct DeviceCopies {
  std::vector<Buffer> buffers;
  std::vector<DeviceMatrix> matrices;
  Buffer input;
};

DeviceCopies upload_copies(Device& device, Transfer& transfer, const MatrixShape& shape, std::mt19937_64& rng) {
  const std::vector<uint8_t> gguf = random_gguf(shape, rng);
  const WeightMatrix host{shape.type, gguf.data(), shape.cols, shape.rows, ggml_row_bytes(shape.type, shape.cols)};
  const uint64_t bytes = device_matrix_bytes(shape.type, shape.rows, shape.cols);
  const int copies = static_cast<int>(std::max<uint64_t>(2, (kColdBytes + bytes - 1) / bytes));
  DeviceCopies d;
  for (int c = 0; c < copies; ++c) {
    d.buffers.emplace_back(device, bytes, MemoryUse::kDevice);
    d.matrices.push_back(upload_matrix(transfer, d.buffers.back(), 0, host));
  }
  std::vector<float> x(shape.cols);
  std::normal_distribution<float> normal;
  for (auto& v : x) v = normal(rng);
  d.input = Buffer(device, x.size() * 4, MemoryUse::kDevice);
  transfer.upload(d.input, 0, x.data(), x.size() * 4);
  return d;
}

// Best time of one product, in microseconds, over `reps` runs of kProducts products.
double time_products(Device& device, MatmulKernels& kernels, const MatrixShape& shape, const DeviceCopies& d,
                     int reps) {
  Buffer scratch(device, std::max<uint64_t>(16, MatmulKernels::scratch_bytes(shape.type, 1, shape.cols)),
                 MemoryUse::kDevice);
  Buffer output(device, shape.rows * 4, MemoryUse::kDevice);
  CommandSequence seq(device);
  seq.begin();
  const PreparedActivations prepared =
      kernels.record_prepare(seq, shape.type, d.input.address(), 1, shape.cols, shape.cols, scratch.address());
  seq.barrier();
  seq.write_timestamp(0);
  for (int i = 0; i < kProducts; ++i) {
    kernels.record_matmul(seq, d.matrices[i % d.matrices.size()], prepared, output.address(), shape.rows,
                          MatmulKernel::kMatvec);
    seq.barrier();
  }
  seq.write_timestamp(1);
  seq.end();
  seq.run();  // warm-up: pipelines, clocks
  double best_ns = 1e300;
  for (int r = 0; r < reps; ++r) {
    seq.run();
    const std::vector<double> ns = seq.timestamps_ns();
    best_ns = std::min(best_ns, ns[1] - ns[0]);
  }
  return best_ns / kProducts / 1e3;
}

MatmulKernels::Options parse_shape(const std::string& text) {
  MatmulKernels::Options options;
  if (!text.empty()) parse_matvec_shape("--shape", text, options);
  return options;
}

int run(int argc, char** argv) {
  CLI::App app{"Vulkan matrix-vector kernels on Gemma 3 12B's decode matrices (GB/s)"};
  int device_index = -1;
  std::vector<std::string> shapes;
  int reps = 5;
  std::vector<std::string> only;
  app.add_option("--gpu-device", device_index, "device index (channel gpu list); default: the best");
  app.add_option("--shape", shapes,
                 "matrix-vector shape threads,rows,subgroup_rows[,blocks[,split]] (threads per workgroup, rows "
                 "per workgroup, Q4_0 / Q8_0 rows per subgroup, blocks whose loads a lane issues together, "
                 "subgroups sharing a group of rows); "
                 "repeatable; default: the kernels' defaults");
  app.add_option("--reps", reps, "timed runs per matrix (the best is kept)")->check(CLI::PositiveNumber);
  app.add_option("--matrix", only, "time only these matrices (attn_q, ..., ffn_down, output); repeatable");
  CLI11_PARSE(app, argc, argv);

  Device device(device_index >= 0 ? std::optional<uint32_t>(device_index) : std::nullopt);
  PipelineCache pipelines(device);
  Transfer transfer(device);
  if (shapes.empty()) shapes.push_back("");
  std::vector<std::unique_ptr<MatmulKernels>> kernels;
  fmt::print("device: {}\n", device.info().name);
  for (size_t k = 0; k < shapes.size(); ++k) {
    kernels.push_back(std::make_unique<MatmulKernels>(device, pipelines, parse_shape(shapes[k])));
    const MatmulKernels::Options& o = parse_shape(shapes[k]);
    fmt::print("shape {}: {} threads, {} rows per workgroup, {} per subgroup, {} blocks in flight, {} subgroups a "
               "row{}\n",
               k, o.matvec_workgroup, o.matvec_q_rows, o.matvec_subgroup_rows, o.matvec_q_blocks, o.matvec_split,
               kernels.back()->uses_integer_dot() ? ", integer dot" : "");
  }
  fmt::print("{:<12} {:>4} {:>13}", "matrix", "type", "rows x cols");
  for (size_t k = 0; k < shapes.size(); ++k) fmt::print("  {:>8} {:>7}", fmt::format("#{} us", k), "GB/s");
  fmt::print("\n");
  std::mt19937_64 rng(1);
  std::vector<double> token_us(shapes.size(), 0.0);
  double token_bytes = 0;
  for (const MatrixShape& shape : kShapes) {
    if (!only.empty() && std::find(only.begin(), only.end(), shape.name) == only.end()) continue;
    const DeviceCopies copies = upload_copies(device, transfer, shape, rng);
    const double bytes = static_cast<double>(device_matrix_bytes(shape.type, shape.rows, shape.cols));
    fmt::print("{:<12} {:>4} {:>6}x{:<6}", shape.name, ggml_type_traits(shape.type).name, shape.rows, shape.cols);
    for (size_t k = 0; k < shapes.size(); ++k) {
      const double us = time_products(device, *kernels[k], shape, copies, reps);
      fmt::print("  {:8.1f} {:7.1f}", us, bytes / (us * 1e3));
      token_us[k] += us * shape.per_token;
    }
    fmt::print("\n");
    token_bytes += bytes * shape.per_token;
  }
  if (!only.empty()) return 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    fmt::print("shape {}: one token's products {:.2f} ms for {:.2f} GB: {:.0f} GB/s, {:.0f} tok/s from them alone\n", k,
               token_us[k] / 1e3, token_bytes / 1e9, token_bytes / (token_us[k] * 1e3), 1e6 / token_us[k]);
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
