// Push constants of the matrix kernels (matvec.comp, matmul.comp); mirrored by MatmulPush in
// matmul_kernels.cpp (static_asserts there keep the two in step).
//   dst[t * dst_stride + i] = dot(weight row (row_ids == 0 ? i : row_ids[i]), activations of token t)
// for t < n_tokens, i < n_out. Prepared activations (matmul_kernels.h) of token t start at
//   f32 / f16 / bf16 values: x + t * x_stride elements
//   Q8_0 (Q4_0 / Q8_0 weights): int8 values packed 4 per uint at x + t * x_stride bytes, and
//                               their f32 block scales at x_scales + t * (x_stride / 32) floats.
layout(push_constant, std430) uniform MatmulParams {
  uint64_t w;         // weight row 0 (float types: GGUF rows; Q4_0 / Q8_0: the split blocks' quants)
  uint64_t w_scales;  // Q4_0 / Q8_0: the split blocks' f16 scales (device_matrix.h), else unused
  uint64_t x;         // prepared activations
  uint64_t x_scales;  // Q8_0 activation scales, else unused
  uint64_t dst;       // f32 results
  uint64_t row_ids;   // 0, or int32 weight-row ids of the output rows (probe candidates)
  uint n_out;         // output rows
  uint cols;          // values per row
  uint n_tokens;
  uint w_row_bytes;
  uint x_stride;
  uint dst_stride;
  uint w_rows;        // rows of the weight matrix: row ids outside [0, w_rows) give NaN outputs
  uint pad;
#ifdef GATED_OUTPUT
  uint64_t up;          // matvec_q.comp GATED_OUTPUT: the up matrix's quants (w is the gate's)
  uint64_t up_scales;   //   and its f16 scales
  uint64_t out_scales;  //   the f32 scales of the Q8_0 output (dst: its values)
  uint64_t gelu_table;  //   gelu.glsl's table
#endif
#ifdef HEAD_INPUTS
  uint64_t inputs;      // matvec_q.comp HEAD_INPUTS: the layer's InputsParams (attention_inputs.glsl)
  uint64_t arrivals;    //   uint per head of rows: workgroups done, zero between dispatches
#endif
} p;

// Weight row of output row i, and whether it is valid (a row id in range).
uint weight_row(uint i, out bool valid) {
  if (p.row_ids == 0ul) { valid = true; return i; }
  const int id = I32Ptr(p.row_ids).v[i];
  valid = id >= 0 && uint(id) < p.w_rows;
  return valid ? uint(id) : 0u;
}

uint64_t weight_row_address(uint row) { return p.w + uint64_t(row) * uint64_t(p.w_row_bytes); }
// Q4_0 / Q8_0: the f16 scales of a weight row.
uint64_t weight_scales_address(uint row) { return p.w_scales + uint64_t(row) * uint64_t(p.cols / 32u) * 2u; }
