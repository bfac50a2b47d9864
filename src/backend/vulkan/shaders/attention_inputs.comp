#version 460
// The attention inputs of a batch (attention_inputs.glsl), a workgroup per (token, head):
// workgroup (t, h) = t * (n_head + 2 n_head_kv) + h. n_head_kv = 0 prepares the queries alone (a
// KV-shared layer, which writes no KV).
// Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS, 2 MAX_HEAD_DIM.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint MAX_HEAD_DIM = 512;
#include "reduce.glsl"
#include "attention_inputs.glsl"

layout(push_constant, std430) uniform InputsPush { InputsParams params; } p;

void main() {
  const uint heads = p.params.n_head + 2u * p.params.n_head_kv;
  const uint index = flat_workgroup_index();
  if (index >= p.params.n_tokens * heads) return;  // the whole workgroup, before any barrier
  prepare_attention_input(p.params, index / heads, index % heads);
}
