// Attention of one query head over a list of cached f16 keys and values.
//
// Two accumulation schemes, chosen by batch size the way llama.cpp's CPU flash attention
// chooses them, so that logits agree with the peer closely enough for quantized models too
// (where any difference can flip an int8 rounding of the next layer's activations):
//   - batches of kF32AttentionMinQueries or more queries: scores, softmax and the weighted sum
//     of values in f32 (llama.cpp's tiled path);
//   - smaller batches, including single-token decode: the query is rounded to f16 and the
//     weighted sum of values is kept in an f16 accumulator with an online softmax (llama.cpp's
//     one-row path).
#pragma once

#include <cstdint>
#include <span>

namespace channel::cpu {

inline constexpr int64_t kF32AttentionMinQueries = 64;

struct AttentionInputs {
  std::span<const float> query;         // [head_dim], already normed, rotated and scaled
  std::span<const uint16_t* const> keys;    // visible keys in chronological order, f16 [head_dim]
  std::span<const uint16_t* const> values;  // the matching values
};

void attend_f32(const AttentionInputs& in, float* out, std::span<float> scratch);
void attend_f16_accumulate(const AttentionInputs& in, float* out, std::span<uint16_t> scratch);

}  // namespace channel::cpu
