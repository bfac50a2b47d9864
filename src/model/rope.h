// Rotate-half (NEOX) RoPE as Gemma's attention applies it, with the angles computed as llama.cpp
// computes them: every backend takes its cos/sin from here, so their rotations agree bit for bit
// (GPU cos/sin are approximate, and far from zero less accurate still).
#pragma once

#include <cstdint>
#include <span>

namespace channel {

// RoPE of one head in place: pairs (i, i + n_rot/2) for i < n_rot/2 rotate by
// position * freq_scale * base^(-2i/n_rot) / freq_factor[i]; dims from n_rot on are unchanged.
class RopeTable {
 public:
  // cos/sin for one position, computed as ggml does (theta advanced by repeated multiplication
  // in f32), so the rotations match the peer's bit for bit.
  void compute(int32_t position, int n_rot, float base, float freq_scale, std::span<const float> freq_factors);
  void apply(float* head) const;

  int pairs() const { return n_rot_ / 2; }
  float cos(int pair) const { return cos_[pair]; }
  float sin(int pair) const { return sin_[pair]; }

 private:
  int n_rot_ = 0;
  float cos_[4096];
  float sin_[4096];
};

// cos/sin of the turn that moves a key RoPE placed at some position p to p + delta: pair i turns
// by delta * freq_scale * base^(-2i/n_rot) / freq_factor[i]. Angles are formed in double and
// reduced mod 2*pi, so a delta of millions of positions stays exact to f32 rounding.
void rope_rotation_by(int64_t delta, int n_rot, float base, float freq_scale, std::span<const float> freq_factors,
                      float* cos_out, float* sin_out);

// Applies rope_rotation_by's turn to a head: x0' = x0 c - x1 s, x1' = x0 s + x1 c (not fused).
void rope_rotate_by(float* head, int64_t delta, int n_rot, float base, float freq_scale,
                    std::span<const float> freq_factors);

}  // namespace channel
