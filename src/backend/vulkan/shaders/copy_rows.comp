#version 460
// Row copies between two buffers of 16-bit rows: dst row dst_rows[i] = src row src_rows[i]
// (row ids 0 .. n-1 when the id buffer is 0). Gathers the KV of chosen slots for export and
// scatters imported KV into its slots. One workgroup per row. Specialization constant 0:
// workgroup size.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform CopyRowsParams {
  uint64_t src;
  uint64_t dst;
  uint64_t src_rows;  // uint32 [n], or 0 for 0 .. n-1
  uint64_t dst_rows;  // uint32 [n], or 0 for 0 .. n-1
  uint n;
  uint width;         // 16-bit values per row
} p;

void main() {
  const uint i = flat_workgroup_index();
  if (i >= p.n) return;
  const uint from = p.src_rows == 0ul ? i : U32Ptr(p.src_rows).v[i];
  const uint to = p.dst_rows == 0ul ? i : U32Ptr(p.dst_rows).v[i];
  U16Ptr src = U16Ptr(p.src + uint64_t(from) * p.width * 2u);
  U16Ptr dst = U16Ptr(p.dst + uint64_t(to) * p.width * 2u);
  for (uint d = gl_LocalInvocationID.x; d < p.width; d += gl_WorkGroupSize.x) dst.v[d] = src.v[d];
}
