// Element-wise and per-row operations of the Gemma decoder on f32 activations. Each follows
// the arithmetic of llama.cpp's CPU backend (accumulation width, rounding points) so that the
// forward pass stays close to the peer, and each is written to be read as the formula.
#pragma once

#include <cstdint>
#include <span>

namespace channel::cpu {

// y = x / sqrt(mean(x^2) + eps) * weight (weight may be empty: unweighted). x and y may alias.
void rms_norm(const float* x, float* y, int64_t n, float eps, std::span<const float> weight);

// Rotate-half (NEOX) RoPE of one head in place: pairs (i, i + n_rot/2) for i < n_rot/2 rotate by
// position * freq_scale * base^(-2i/n_rot) / freq_factor[i]; dims from n_rot on are unchanged.
class RopeTable {
 public:
  // cos/sin for one position, computed as ggml does (theta advanced by repeated multiplication
  // in f32), so the rotations match the peer's bit for bit.
  void compute(int32_t position, int n_rot, float base, float freq_scale, std::span<const float> freq_factors);
  void apply(float* head) const;

 private:
  int n_rot_ = 0;
  float cos_[4096];
  float sin_[4096];
};

// Rotates a head that RoPE placed at some position p so that it is as if placed at p + delta:
// pair i turns by delta * freq_scale * base^(-2i/n_rot) / freq_factor[i]. Angles are formed in
// double and reduced mod 2*pi, so a delta of millions of positions stays exact to f32 rounding.
void rope_rotate_by(float* head, int64_t delta, int n_rot, float base, float freq_scale,
                    std::span<const float> freq_factors);

// y[i] = gelu_tanh(gate[i]) * up[i], with GELU evaluated through an f16 table as llama.cpp does
// (input rounded to f16, output stored as f16).
void geglu(const float* gate, const float* up, float* y, int64_t n);

// x[i] = cap * tanh(x[i] / cap).
void softcap(float* x, int64_t n, float cap);

}  // namespace channel::cpu
