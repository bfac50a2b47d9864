// Element-wise and per-row operations of the Gemma decoder on f32 activations (GEGLU has its own
// SIMD file, geglu.h). Each follows the arithmetic of llama.cpp's CPU backend (accumulation
// width, rounding points) so that the forward pass stays close to the peer, and each is written to
// be read as the formula.
#pragma once

#include <cstdint>
#include <span>

#include "model/model_config.h"
#include "model/rope.h"

namespace channel::cpu {

// y = x / sqrt(mean(x^2) + eps) * weight (weight may be empty: unweighted). x and y may alias.
void rms_norm(const float* x, float* y, int64_t n, float eps, std::span<const float> weight);

// One token's input of one layer's per-layer embedding block (Gemma 4 E-models), in llama.cpp's
// gemma4 order: projected *= scales.projection (in place), then
// y = (RMSNorm(projected) * norm + token_row * scales.token) * scales.input.
void per_layer_input(float* projected, const float* token_row, float* y, int64_t n, float eps,
                     std::span<const float> norm, const PerLayerInputScales& scales);

// x[i] = cap * tanh(x[i] / cap).
void softcap(float* x, int64_t n, float cap);

}  // namespace channel::cpu
