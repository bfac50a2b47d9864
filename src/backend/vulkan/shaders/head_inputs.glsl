// One attention head's inputs, formed as the CPU backend forms them: the head's values
// RMS-normed (weighted for queries and keys, unweighted for Gemma 4's V-norm), then RoPE on the
// pairs (i, i + n_rot/2) with dims from n_rot on unchanged (model/rope.h RopeTable::apply). Used by
// attention_inputs.comp (every token and head of a batch) and by attention_rows.comp, which forms
// a decoded token's own inputs itself instead of waiting for another dispatch.
// Needs: MAX_HEAD_DIM, HEAD_MIN_WORKGROUP (#define: the fewest invocations of the workgroups that
// call it, which sizes the values each invocation holds), reduce.glsl.

// The parameters of attention_inputs.comp (shader_push.h InputsPush): its push constants, and for
// attention_rows.comp a per-layer copy in a buffer.
struct AttentionInputs {
  uint64_t q;             // f32 [n_tokens][n_head * head_dim], rewritten in place
  uint64_t k;             // f32 [n_tokens][n_head_kv * head_dim] (projection output)
  uint64_t v;             // f32 likewise (may equal k: V = K layers)
  uint64_t q_norm;        // f32 [head_dim]
  uint64_t k_norm;        // f32 [head_dim]
  uint64_t rope;          // f32 [n_tokens][n_rot / 2][cos, sin], computed on the host (model/rope.h)
  uint64_t slots;         // uint32 per token
  uint64_t k_cache;       // f16 [slots][n_head_kv * head_dim]
  uint64_t v_cache;
  uint head_dim;
  uint n_head;
  uint n_head_kv;         // heads of K and V written; 0 on a KV-shared layer (queries only)
  uint n_rot;
  float query_scale;
  float eps;
  uint v_norm;            // 1: unweighted RMSNorm of V
  uint n_tokens;
};

shared float head[MAX_HEAD_DIM];
const uint kHeadPerLane = (MAX_HEAD_DIM + HEAD_MIN_WORKGROUP - 1u) / HEAD_MIN_WORKGROUP;
const uint kHeadPairsPerLane = (MAX_HEAD_DIM / 2u + HEAD_MIN_WORKGROUP - 1u) / HEAD_MIN_WORKGROUP;

// Leaves the head at `source` (dim f32 values) in shared `head`: normed when `normed` (weighted by
// the values at `weight` unless it is 0), then rotated on its first 2 * half_rot dims by the
// (cos, sin) pairs at `rope`. Every invocation of the workgroup must call it (barriers).
void prepare_head(uint64_t source, uint64_t weight, bool normed, uint half_rot, uint64_t rope, uint dim, float eps) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  // Every global read first (the head, its norm weights, its RoPE angles), so that their
  // latencies overlap instead of following one another through the reduction and the barriers.
  float x[kHeadPerLane], weights[kHeadPerLane];
  F32Ptr src = F32Ptr(source), w = F32Ptr(weight);
  for (uint k = 0, d = lane; k < kHeadPerLane; ++k, d += stride) {
    x[k] = d < dim ? src.v[d] : 0.0;
    weights[k] = d < dim && weight != 0ul ? w.v[d] : 1.0;
  }
  F32Ptr angles_row = F32Ptr(rope);
  vec2 angles[kHeadPairsPerLane];  // cos, sin of pairs lane, lane + stride, ...
  for (uint k = 0, i = lane; k < kHeadPairsPerLane; ++k, i += stride) {
    angles[k] = i < half_rot ? vec2(angles_row.v[2u * i], angles_row.v[2u * i + 1u]) : vec2(1.0, 0.0);
  }

  double squares = 0.0;
  for (uint k = 0, d = lane; k < kHeadPerLane && d < dim; ++k, d += stride) {
    precise float square = x[k] * x[k];
    squares += double(square);
  }
  const float scale = rms_scale(workgroup_sum_f64(squares), dim, eps);
  for (uint k = 0, d = lane; k < kHeadPerLane && d < dim; ++k, d += stride) {
    head[d] = !normed ? x[k] : x[k] * scale * weights[k];  // x * scale * 1.0 is x * scale: the unweighted norm
  }
  barrier();

  // Each pair belongs to one invocation, which reads and writes both of its values.
  for (uint k = 0, i = lane; k < kHeadPairsPerLane && i < half_rot; ++k, i += stride) {
    const float c = angles[k].x, s = angles[k].y;
    const float x0 = head[i], x1 = head[i + half_rot];
    head[i] = fma(x0, c, -(x1 * s));
    head[i + half_rot] = fma(x0, s, x1 * c);
  }
  barrier();
}
