// The attention inputs of one (token, head): a query gets QK-norm, RoPE and the query scale and
// goes to q_out; a key gets QK-norm and RoPE and goes to its KV slot as f16; a value gets the
// unweighted V-norm (Gemma 4) and goes to its slot as f16. Heads 0 .. n_head-1 are queries, then
// n_head_kv keys, then n_head_kv values. Run by attention_inputs.comp (a workgroup per (token,
// head)) and by matvec_q.comp's HEAD_INPUTS form (the Q/K/V product's last workgroup of a head).
// Needs: specialization constants MAX_SUBGROUPS and MAX_HEAD_DIM, reduce.glsl; every invocation of
// the workgroup calls it (barriers). A workgroup may prepare several heads in turn: the reduction's
// barriers come before `head` is written again.

struct InputsParams {
  uint64_t q;             // f32 projections: token t's n_head * head_dim values at q + t * projections_width
  uint64_t k;             // f32 likewise, n_head_kv * head_dim values a token
  uint64_t v;             // f32 likewise (may equal k: V = K layers)
  uint64_t q_out;         // f32 [n_tokens][n_head * head_dim]: the queries, ready for the attention
  uint64_t q_norm;        // f32 [head_dim]
  uint64_t k_norm;        // f32 [head_dim]
  uint64_t rope;          // f32 [n_tokens][n_rot / 2][cos, sin], computed on the host (model/rope.h)
  uint64_t slots;         // uint32 per token
  uint64_t k_cache;       // f16 [slots][n_head_kv * head_dim]
  uint64_t v_cache;
  uint head_dim;
  uint n_head;
  uint n_head_kv;
  uint n_rot;
  float query_scale;
  float eps;
  uint v_norm;            // 1: unweighted RMSNorm of V
  uint n_tokens;
  uint projections_width;  // values from one token's q, k and v to the next token's
  uint pad;
};

shared float head[MAX_HEAD_DIM];
// Values and RoPE pairs an invocation holds.
const uint kMaxPerLane = (MAX_HEAD_DIM + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;

// `source` is read through a coherent reference: in HEAD_INPUTS form other workgroups of the same
// dispatch wrote it.
void prepare_attention_input(const InputsParams ip, uint t, uint h) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = ip.head_dim;
  const bool is_query = h < ip.n_head, is_key = !is_query && h < ip.n_head + ip.n_head_kv;
  const uint kv_head = is_query ? 0u : (is_key ? h - ip.n_head : h - ip.n_head - ip.n_head_kv);
  const uint64_t source = (is_query ? ip.q : (is_key ? ip.k : ip.v)) +
                          (uint64_t(t) * ip.projections_width + (is_query ? h : kv_head) * dim) * 4u;
  CoherentF32 src = CoherentF32(source);
  const bool rotated = is_query || is_key;  // normed with weights, then RoPE
  const bool normed = rotated || ip.v_norm != 0u;

  // Every global read first (the head, its norm weights, its RoPE angles), so that their
  // latencies overlap instead of following one another through the reduction and the barriers.
  float x[kMaxPerLane], weights[kMaxPerLane];
  F32Ptr weight = F32Ptr(is_query ? ip.q_norm : ip.k_norm);
  for (uint k = 0, d = lane; k < kMaxPerLane; ++k, d += stride) {
    x[k] = d < dim ? src.v[d] : 0.0;
    weights[k] = d < dim && rotated ? weight.v[d] : 1.0;
  }
  const uint half_rot = rotated ? ip.n_rot / 2u : 0u;
  F32Ptr rope = F32Ptr(ip.rope + uint64_t(t) * (ip.n_rot / 2u) * 8u);
  vec2 angles[kMaxPairsPerLane];  // cos, sin of pairs lane, lane + stride, ...
  for (uint k = 0, i = lane; k < kMaxPairsPerLane; ++k, i += stride) {
    angles[k] = i < half_rot ? vec2(rope.v[2u * i], rope.v[2u * i + 1u]) : vec2(1.0, 0.0);
  }

  // RMSNorm over the head (weighted for Q and K, unweighted for V when v_norm).
  double squares = 0.0;
  for (uint k = 0, d = lane; k < kMaxPerLane && d < dim; ++k, d += stride) {
    precise float square = x[k] * x[k];
    squares += double(square);
  }
  const float scale = rms_scale(workgroup_sum_f64(squares), dim, ip.eps);
  for (uint k = 0, d = lane; k < kMaxPerLane && d < dim; ++k, d += stride) {
    head[d] = !normed ? x[k] : x[k] * scale * weights[k];  // x * scale * 1.0 is x * scale: V's unweighted norm
  }
  barrier();

  // RoPE on queries and keys: pairs (i, i + n_rot/2), dims from n_rot on unchanged, fused as
  // the CPU backend (model/rope.h RopeTable::apply). Each pair belongs to one invocation, which
  // reads and writes both of its values.
  for (uint k = 0, i = lane; k < kMaxPairsPerLane && i < half_rot; ++k, i += stride) {
    const float c = angles[k].x, s = angles[k].y;
    const float x0 = head[i], x1 = head[i + half_rot];
    head[i] = fma(x0, c, -(x1 * s));
    head[i + half_rot] = fma(x0, s, x1 * c);
  }
  barrier();

  if (is_query) {
    F32Ptr dst = F32Ptr(ip.q_out + (uint64_t(t) * ip.n_head * dim + h * dim) * 4u);
    for (uint d = lane; d < dim; d += stride) dst.v[d] = ip.query_scale == 1.0 ? head[d] : head[d] * ip.query_scale;
  } else {
    const uint slot = U32Ptr(ip.slots).v[t];
    U16Ptr cache = U16Ptr((is_key ? ip.k_cache : ip.v_cache) + (uint64_t(slot) * ip.n_head_kv * dim + kv_head * dim) * 2u);
    for (uint d = lane; d < dim; d += stride) cache.v[d] = uint16_t(f32_to_f16_bits(head[d]));
  }
}
