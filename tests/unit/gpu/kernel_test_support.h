// Running the matrix kernels on random GGUF matrices and activations (tests/support/random_weights.h,
// shared with the CPU matrix tests), for the kernel tests.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/matmul.h"
#include "backend/vulkan/matmul_kernels.h"
#include "core/half.h"
#include "gpu_test_support.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"
#include "random_weights.h"

namespace channel::vulkan::testing {

constexpr double kUnitRoundoff = 0x1p-24;  // f32
constexpr uint32_t kPoison = 0x7fc00bad;     // a NaN no kernel writes (theirs is 0x7fc00000)

using channel::testing::random_activations;
using channel::testing::random_f16;
using channel::testing::random_matrix;
using channel::testing::random_value;
using channel::testing::TestMatrix;

// sqrt(sum (got - want)^2 / sum want^2) over the n_tokens x n_out results (got: out_stride apart).
inline double relative_l2(std::span<const float> got, int64_t out_stride, std::span<const float> want, int64_t n_out,
                          int64_t n_tokens) {
  double error = 0.0, norm = 0.0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n_out; ++i) {
      const double g = got[t * out_stride + i], w = want[t * n_out + i];
      error += (g - w) * (g - w);
      norm += w * w;
    }
  }
  return std::sqrt(error / norm);
}

// The sum of the absolute values of the terms of output (row, token): f32 rounding errors of any
// summation order are bounded relative to it (as in tests/unit/cpu/matmul_test.cpp).
inline double absolute_terms(const WeightMatrix& w, int64_t row, const float* x) {
  std::vector<float> weights(w.cols);
  cpu::dequantize_row(w, row, weights.data());
  std::vector<BlockQ8_0> q8(w.cols / kQuantBlock + 1);
  if (is_quantized(w.type)) cpu::quantize_row_q8_0_reference(x, w.cols, q8.data());
  double sum = 0.0;
  for (int64_t i = 0; i < w.cols; ++i) {
    double activation = x[i];
    if (is_quantized(w.type)) {
      activation = f16_to_f32(q8[i / kQuantBlock].d) * static_cast<double>(q8[i / kQuantBlock].qs[i % kQuantBlock]);
    } else if (w.type == GgmlType::F16) {
      activation = f16_to_f32(f32_to_f16(x[i]));
    } else if (w.type == GgmlType::BF16) {
      activation = bf16_to_f32(f32_to_bf16(x[i]));
    }
    sum += std::fabs(weights[i] * activation);
  }
  return sum;
}

// Runs one matrix product on the device: uploads the matrix in the device layout at
// `weight_offset` bytes into its buffer and the activations, poisons the output, records prepare + matmul (or matmul_rows when
// `rows` is given) and returns the [n_tokens][out_stride] output as computed.
// The product of a matrix already on the device with x (n_tokens x matrix.cols), out_stride
// apart: all of its rows, or the rows `rows` names.
inline std::vector<float> run_gpu_product(GpuContext& gpu, MatmulKernels& kernels, const DeviceMatrix& matrix,
                                          std::span<const float> x, int64_t n_tokens, MatmulKernel kernel,
                                          int64_t out_stride, const std::vector<int32_t>* rows = nullptr) {
  const int64_t n_out = rows ? static_cast<int64_t>(rows->size()) : matrix.rows;
  Buffer input(gpu.device, x.size_bytes(), MemoryUse::kDevice);
  Buffer scratch(gpu.device, std::max<uint64_t>(16, MatmulKernels::scratch_bytes(matrix.type, n_tokens, matrix.cols)),
                 MemoryUse::kDevice);
  Buffer output(gpu.device, static_cast<uint64_t>(n_tokens * out_stride) * sizeof(float), MemoryUse::kDevice);
  Buffer row_ids(gpu.device, rows ? std::max<size_t>(4, rows->size() * 4) : 4, MemoryUse::kDevice);
  gpu.transfer.upload(input, 0, x.data(), x.size_bytes());
  if (rows) gpu.transfer.upload(row_ids, 0, rows->data(), rows->size() * 4);

  CommandSequence seq(gpu.device);
  seq.begin();
  seq.fill(output, 0, output.size(), kPoison);
  const PreparedActivations prepared =
      kernels.record_prepare(seq, matrix.type, input.address(), n_tokens, matrix.cols, matrix.cols, scratch.address());
  seq.barrier();
  if (rows) {
    kernels.record_matmul_rows(seq, matrix, prepared, row_ids.address(), n_out, output.address(), out_stride, kernel);
  } else {
    kernels.record_matmul(seq, matrix, prepared, output.address(), out_stride, kernel);
  }
  seq.end();
  seq.run();
  std::vector<float> out(n_tokens * out_stride);
  gpu.transfer.download(output, 0, out.data(), output.size());
  return out;
}

// run_gpu_product of GGUF matrix w, uploaded weight_offset bytes into its buffer.
inline std::vector<float> run_gpu_matmul(GpuContext& gpu, MatmulKernels& kernels, const WeightMatrix& w,
                                         std::span<const float> x, int64_t n_tokens, MatmulKernel kernel,
                                         int64_t out_stride, const std::vector<int32_t>* rows = nullptr,
                                         uint64_t weight_offset = 0) {
  Buffer weights(gpu.device, weight_offset + device_matrix_bytes(w.type, w.rows, w.cols), MemoryUse::kDevice);
  const DeviceMatrix matrix = upload_matrix(gpu.transfer, weights, weight_offset, w);
  return run_gpu_product(gpu, kernels, matrix, x, n_tokens, kernel, out_stride, rows);
}

inline std::vector<float> run_cpu_matmul(const WeightMatrix& w, std::span<const float> x, int64_t n_tokens,
                                         const std::vector<int32_t>* rows = nullptr) {
  ThreadPool pool(2);
  const int64_t n_out = rows ? static_cast<int64_t>(rows->size()) : w.rows;
  std::vector<float> out(n_tokens * n_out, std::nanf(""));
  if (rows) {
    cpu::matmul_rows(w, x.data(), n_tokens, *rows, out.data(), pool);
  } else {
    cpu::matmul(w, x.data(), n_tokens, out.data(), pool);
  }
  return out;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

}  // namespace channel::vulkan::testing
