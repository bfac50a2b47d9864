#version 460
// Attention of one query head of one token over the slots of the attention view, for decode and
// batches of fewer than 64 tokens (attention.comp tiles larger ones):
//   out = sum_j softmax_j(q . k_j) v_j   over listed slots j whose key position is in
//   [min_position(t), position(t)] (causal; on sliding layers also within the window).
// Queries are already scaled; keys and values are f16 in their physical slots, read through the
// view's slot list, so the ring never moves memory.
//
// The arithmetic is llama.cpp's CPU flash attention step for step, as the CPU backend's
// (backend/cpu/attention_reference.cpp), so that the GPU's logits stay as close to the peer as
// the CPU's (quantized models amplify any difference through their int8 activations):
//   scheme 0, one-row: query rounded to f16, scores as ggml_vec_dot_f16, weighted values
//     accumulated in f16 with an online softmax over the keys in view order;
//   scheme 1, split-KV (512+ cells; llama.cpp's CPU backend splits single tokens only, the GPU
//     every batch of fewer than 64): the one-row scheme on each of n_chunks chunks of listed keys
//     (the host passes first_cell 0, so cells are list positions), one workgroup per (token, head,
//     chunk), each writing its partial maximum, sum and accumulators (a chunk with no key the
//     token sees: sum 0); attention_combine.comp merges them as llama.cpp does.
// The output is f32, or (out_q != 0) the Q8_0 activations of the wo product, quantized here
// (quantize_workgroup.glsl) instead of by another dispatch.
// The work is spread without changing that arithmetic. The slots of 128 listed keys at a time are
// looked up once (resolve_keys), and keys are taken in batches of kBatch, each batch's key and
// value loads issued together into registers before the previous batch's online softmax (a
// serial chain; at decode the whole stage is this one workgroup's chain, so a load latency per
// batch, not per key or per loop step, is what the loads cost):
//   1. the workgroup stores the batch's values into shared memory, and its groups of 64
//      invocations form the scores' 64 partial sums of ggml_vec_dot_f16 (AVX-512: 4 accumulators
//      of 16 lanes, each a fused multiply-add chain over steps of 64 elements), one invocation
//      per partial sum, consecutive invocations reading consecutive key elements;
//   2. one invocation per key adds the partial sums in ggml's order (and the elements past the
//      last whole step, in double);
//   3. every invocation runs the online softmax over the batch's keys in order for its own
//      pairs of output dims, reading the values from shared memory.
// Workgroup index = t * n_head + h (scheme 1: (t * n_head + h, chunk) = (index / n_chunks,
// index % n_chunks)).
// 128 invocations. Needs shaderFloat64 (sums in double, as the CPU). Specialization constant:
// 0 MAX_HEAD_DIM (even).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"

const uint kBatch = 16;        // keys per batch
const uint kSlotSums = 64;     // ggml_vec_dot_f16's partial sums: 4 accumulators x 16 lanes
const uint kGroups = 2;        // groups of kSlotSums invocations in the workgroup
const uint kKeysPerGroup = kBatch / kGroups;
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + 127u) / 128u;

shared float query[MAX_HEAD_DIM];
shared float slot_sums[kBatch * kSlotSums];
shared float batch_scores[kBatch];
shared uint batch_values[kBatch * (MAX_HEAD_DIM / 2u)];  // f16 pairs: dims 2i, 2i + 1 in word i

uint list_index(int cell) { return uint(clamp(cell - step.first_cell, 0, int(step.n_view))); }

// The slots of up to kResolved listed keys, looked up once per key and all at once (the view, then
// the slot's position: two dependent loads); kHidden for a key the token does not see.
const uint kResolved = 128;  // one key per invocation
const uint kHidden = 0xffffffffu;
shared uint key_slots[kResolved];

// key_slots for the listed keys [j0, j0 + n), n <= kResolved. Called once the previous keys' batches
// are done (accumulate_batch ends with a barrier).
void resolve_keys(uint j0, uint n, int position, int min_position) {
  const uint lane = gl_LocalInvocationID.x;
  uint slot;
  if (lane < n) key_slots[lane] = visible_key(j0 + lane, position, min_position, slot) ? slot : kHidden;
  barrier();
}

// A batch's loads, issued together and kept in registers (the next batch's are issued before the
// current one's online softmax, so that its chain hides their latency):
//   loaded_values: the batch's values as f16 pairs, invocation `lane` holding words lane, lane +
//     WG, ... of the batch (consecutive invocations read consecutive words of a key);
//   loaded_keys: the key elements of this invocation's partial sums (below), one per step of 64.
const uint kValueWordsPerLane = (kBatch * (MAX_HEAD_DIM / 2u) + 127u) / 128u;
const uint kKeySteps = MAX_HEAD_DIM >= 64u ? MAX_HEAD_DIM / 64u : 1u;
uint loaded_values[kValueWordsPerLane];
float loaded_keys[kKeySteps][kKeysPerGroup];
bool loaded_visible[kKeysPerGroup];

// Loads the keys key_slots[k0, k0 + n) into the registers above.
void load_batch(uint k0, uint n, uint kv_head) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, pairs = p.head_dim / 2u;
  // Word i = lane + c * stride is word w of key k (i = k * pairs + w), stepped without dividing.
  uint k = lane / pairs, w = lane % pairs;
  const uint k_step = stride / pairs, w_step = stride % pairs;
  [[unroll]] for (uint c = 0; c < kValueWordsPerLane; ++c) {
    loaded_values[c] = 0u;
    if (k < n) {
      const uint slot = key_slots[k0 + k];
      if (slot != kHidden) loaded_values[c] = U32Ptr(p.v_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u).v[w];
    }
    k += k_step;
    w += w_step;
    if (w >= pairs) {
      w -= pairs;
      ++k;
    }
  }
  // Group g of 64 invocations takes keys g, g + kGroups, ...: invocation s of the group forms
  // partial sum s (accumulator s / 16, lane s % 16: elements i + s of each step i) of all its keys.
  const uint whole = p.head_dim & ~63u;
  const uint group = lane / kSlotSums, s = lane % kSlotSums;
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    const uint key = group + m * kGroups;
    const uint slot = key < n ? key_slots[k0 + key] : kHidden;
    loaded_visible[m] = slot != kHidden;
    const uint64_t row = p.k_cache + uint64_t(kv_row_offset(loaded_visible[m] ? slot : 0u, kv_head)) * 2u;
    [[unroll]] for (uint i = 0; i < kKeySteps; ++i) {
      loaded_keys[i][m] = loaded_visible[m] && 64u * i < whole ? float(F16Ptr(row).v[64u * i + s]) : 0.0;
    }
  }
}

// Steps 1 and 2 for the loaded batch of keys key_slots[k0, k0 + n): batch_scores[k] is key k0 + k's
// score, -inf when the token does not see it; batch_values holds the batch's values.
void score_batch(uint k0, uint n, uint kv_head) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  const uint pairs = dim / 2u;
  [[unroll]] for (uint c = 0; c < kValueWordsPerLane; ++c) {
    const uint i = lane + c * stride;
    if (i < n * pairs) batch_values[(i / pairs) * (MAX_HEAD_DIM / 2u) + i % pairs] = loaded_values[c];
  }
  const uint whole = dim & ~63u;
  const uint group = lane / kSlotSums, s = lane % kSlotSums;
  float acc[kKeysPerGroup];
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = 0.0;
  [[unroll]] for (uint i = 0; i < kKeySteps; ++i) {
    if (64u * i >= whole) break;
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = fma(query[64u * i + s], loaded_keys[i][m], acc[m]);
  }
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    if (loaded_visible[m]) slot_sums[(group + m * kGroups) * kSlotSums + s] = acc[m];
  }
  barrier();
  if (lane < n) {
    const uint slot = key_slots[k0 + lane];
    float score = kMinusInfinity;
    if (slot != kHidden) {
      float lanes[16];
      for (uint l = 0; l < 16; ++l) {
        const uint base = lane * kSlotSums + l;
        precise float sum = (slot_sums[base] + slot_sums[base + 32u]) + (slot_sums[base + 16u] + slot_sums[base + 48u]);
        lanes[l] = sum;
      }
      double sum = double(reduce16(lanes));
      F16Ptr key = F16Ptr(p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u);
      for (uint i = whole; i < dim; ++i) {
        precise float product = query[i] * float(key.v[i]);
        sum += double(product);
      }
      score = float(sum);
    }
    batch_scores[lane] = score;
  }
  barrier();
}

// Step 3: the one-row online softmax over the batch's n keys for this invocation's pairs of
// dims (lane, lane + stride, ...): running maximum m, sum s and the f16 accumulators.
void accumulate_batch(uint n, inout float m, inout float s, inout vec2 acc[kMaxPairsPerLane]) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, pairs = p.head_dim / 2u;
  for (uint k = 0; k < n; ++k) {
    const float score = batch_scores[k];
    if (score == kMinusInfinity) continue;
    float ms = 1.0, vs = 1.0;
    if (score > m) {  // a new maximum: rescale what was accumulated (ggml_vec_scale_f16)
      ms = exp(m - score);
      m = score;
      for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
        acc[i] = vec2(round_to_f16(acc[i].x * ms), round_to_f16(acc[i].y * ms));
      }
    } else {
      vs = exp(score - m);
    }
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      const vec2 v = unpackHalf2x16(batch_values[k * (MAX_HEAD_DIM / 2u) + w]);
      acc[i] = vec2(round_to_f16(fma(v.x, vs, acc[i].x)), round_to_f16(fma(v.y, vs, acc[i].y)));
    }
    precise float scaled = s * ms;  // S = S*ms + vs, the product rounded on its own
    s = scaled + vs;
  }
  barrier();  // before the next batch overwrites the shared scores and values
}

void main() {
  load_attention_step();
  const bool split = step.scheme == 1u;
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * p.n_head * (split ? step.n_chunks : 1u)) return;  // the whole workgroup
  const uint head_index = split ? index / step.n_chunks : index, chunk = split ? index % step.n_chunks : 0u;
  const uint t = head_index / p.n_head, h = head_index % p.n_head;
  // The listed keys this workgroup reads: its chunk of llama.cpp's cells, or all of them.
  const uint begin = split ? list_index(int(chunk * step.chunk_cells)) : 0u;
  const uint end = split ? list_index(int((chunk + 1u) * step.chunk_cells)) : step.n_view;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = p.head_dim, pairs = dim / 2u;
  const uint kv_head = h / (p.n_head / p.n_head_kv);
  const int position = I32Ptr(p.positions).v[t];
  const int min_position = min_visible_position(position);

  F32Ptr q = F32Ptr(p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint d = lane; d < dim; d += stride) query[d] = round_to_f16(q.v[d]);
  barrier();

  float m = kMinusInfinity, s = 0.0;
  vec2 acc[kMaxPairsPerLane];
  for (uint i = 0; i < kMaxPairsPerLane; ++i) acc[i] = vec2(0.0);
  for (uint j0 = begin; j0 < end; j0 += kResolved) {
    const uint resolved = min(kResolved, end - j0);
    resolve_keys(j0, resolved, position, min_position);
    load_batch(0u, min(kBatch, resolved), kv_head);
    for (uint k0 = 0; k0 < resolved; k0 += kBatch) {
      const uint n = min(kBatch, resolved - k0);
      score_batch(k0, n, kv_head);
      if (k0 + kBatch < resolved) load_batch(k0 + kBatch, min(kBatch, resolved - k0 - kBatch), kv_head);
      accumulate_batch(n, m, s, acc);
    }
  }

  if (split) {
    F32Ptr partial = F32Ptr(p.partials + uint64_t(index) * (2u + dim) * 4u);
    if (lane == 0u) {
      partial.v[0] = m;
      partial.v[1] = s;
    }
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      partial.v[2u + 2u * w] = acc[i].x;
      partial.v[3u + 2u * w] = acc[i].y;
    }
    return;
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  const uint64_t first = uint64_t(t) * p.n_head * dim + h * dim;  // the head's first output value
  if (p.out_q != 0ul) {  // the Q8_0 activations of wo (head_dim a multiple of 32: whole blocks)
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      quantize_values[2u * w] = acc[i].x * inverse;
      quantize_values[2u * w + 1u] = acc[i].y * inverse;
    }
    quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  F32Ptr dst = F32Ptr(p.dst + first * 4u);
  for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
    dst.v[2u * w] = acc[i].x * inverse;
    dst.v[2u * w + 1u] = acc[i].y * inverse;
  }
}
