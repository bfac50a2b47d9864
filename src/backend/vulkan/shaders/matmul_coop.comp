#version 460
// Q4_0 / Q8_0 weights times many Q8_0 activation vectors (prefill) with the block sums on the
// matrix units (VK_NV_cooperative_matrix, int8 x int8 -> int32): matmul.comp's arithmetic, so its
// results bit for bit. Per output, block after block, acc = fma(float(exact block sum), d_w * d_x,
// acc): the CPU backend's block-sequential order.
//
// A workgroup of 4 subgroups (of 32) computes BM rows x 64 tokens, each subgroup a BM / 2 x 32
// quarter as BM / 32 x (32 / MMA_N) product tiles of 16 x MMA_N. Each step stages K_BLOCKS blocks
// of the BM weight rows (nibbles unpacked to int8) and of the 64 token rows in shared memory, while
// the next step's blocks are read from memory into registers (tile_loads.glsl). Every loop over
// loads and over the step's blocks is unrolled, so that no array is indexed at run time: NVIDIA's
// compiler had put the earlier form's load state in local memory (720 bytes a thread in its
// pipeline statistics; 288 now). H100, Gemma 3 12B preset, pp512 in tok/s, two rounds: before
// 4552 / 4548 (229 registers); its loops unrolled 4734 / 4736 (242); these loads (no addresses
// held), unrolled, Q4_0 blocks read ahead as stored and unpacked when staged 6039 /
// 6114 (218 registers a thread); the same unpacking them as read 4698 / 4706 (239 registers);
// the step's blocks unrolled too 6228 / 6214. For each block, each product tile's
// exact int32 sums are scaled into its f32 accumulator element by element, in registers: the
// scales vary per row and per token, and VK_NV_cooperative_matrix (the only form Debian 12's
// glslang 11 has) has no element-wise product of two matrices, so each lane learns once which
// (row, token) each of its elements holds, from an index matrix loaded through the same type.
// (Sending every block's sums through shared memory to be scaled there was half the kernel's
// time.) The kernel takes that mapping to be the one NVIDIA's driver gives a 16 x 16 tile (read on
// an H100 through the index matrix; NVIDIA's are the only implementations of the extension): a
// lane's element i is row r + 8 (i >> 2) and column c + (i & 1) + 8 ((i >> 1) & 1), so each block
// reads 2 row scales a tile and 4 token scales instead of one of each per element (a third of
// the shared-memory loads, and fewer registers: pp512 +3.5% on an H100). The accumulators are f32
// matrices of the same shape: their mapping is checked against the int32 one and against that
// layout, and a device where either differs gets NaN outputs, which the tests catch.
//
// Specialization constant 0: K_BLOCKS, blocks per step. Rows per tile (BM, 64 or 128) come from
// the define TILE_ROWS, one SPIR-V module each (vulkan.cmake), and the product tiles are 16 x 16
// (MMA_N; DeviceFeatures::int8_matrix_n admits only devices that list it): loops whose trip counts
// follow a specialization constant are not unrolled by glslc -O, and in those the int32 sums of a
// product were read element by element at the loop's index, through local memory on NVIDIA's
// compiler (288 bytes a thread at BM 128 when MMA_N and BM were specialization constants; none
// now, 240 registers: H100, pp512 6138 / 6129 -> 6403 / 6419 tok/s in one call).
#extension GL_EXT_control_flow_attributes : require
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#include "common.glsl"
#include "matmul_params.glsl"
#include "quant.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint K_BLOCKS = 2;
const uint MMA_N = 16;

#if !defined(TILE_ROWS) || (TILE_ROWS != 64 && TILE_ROWS != 128)
#error "matmul_coop.comp needs TILE_ROWS 64 or 128"
#endif
const uint BM = TILE_ROWS;  // rows per tile
const uint BN = 64;         // tokens per tile
const uint SUB = 32;        // tokens of a subgroup's quarter
const uint ROW_TILES = BM / 32u;  // 16-row product tiles down a quarter's BM / 2 rows
const uint TILES_N = SUB / MMA_N;  // product tiles across a quarter's tokens
const uint ELEMENTS = 16u * MMA_N / 32u;  // a lane's elements of a 16 x MMA_N tile (subgroups of 32; else NaN outputs)
// Words per staged row: K_BLOCKS blocks of 8 words, padded by 4 so that rows start 16-byte
// aligned (the matrix loads need it) and 4 banks apart.
// Sized as shared_memory.glsl's SHARED_COOP_WORDS, which matmul_kernels.cpp checks.
#include "shared_memory.glsl"
const uint STRIDE = SHARED_COOP_STRIDE(K_BLOCKS);
shared uint w_tile[BM * STRIDE];
shared uint x_tile[BN * STRIDE];
shared float w_scale[K_BLOCKS * BM];  // [block][row]
shared float x_scale[K_BLOCKS * BN];  // [block][token]
// Element e of a 16 x MMA_N tile (row e / MMA_N, column e % MMA_N) holds e, as int32 and as f32.
shared int index_table[SHARED_COOP_INDEX_TABLE(MMA_N)];
shared float index_table_f[SHARED_COOP_INDEX_TABLE(MMA_N)];

// The step's blocks are read a step ahead into registers (tile_loads.glsl), each block's 8 words
// one row of STRIDE words.
uint tile_word(uint line, uint block, uint lines) { return line * STRIDE + block * 8u; }
const uint TILE_THREADS = 128;
#include "tile_loads.glsl"

void main() {
  const uint id = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * BM;
  const uint tok0 = gl_WorkGroupID.y * BN;
  const uint sub_row = (gl_SubgroupID & 1u) * (BM / 2u);  // the quarter's first row and token in the tile
  const uint sub_tok = (gl_SubgroupID >> 1) * SUB;

  // Which element of a product tile each of this lane's components is.
  for (uint e = id; e < 16u * MMA_N; e += 128u) {
    index_table[e] = int(e);
    index_table_f[e] = float(e);
  }
  barrier();
  icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> element;
  coopMatLoadNV(element, index_table, 0, MMA_N, false);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> element_f;
  coopMatLoadNV(element_f, index_table_f, 0, MMA_N, false);
  bool same_mapping = element.length() == int(ELEMENTS) && element_f.length() == int(ELEMENTS);
  // (& 7: no-ops where the layout holds, and in range of the scales where it does not.)
  const uint first_row = (uint(element[0]) / MMA_N) & 7u, first_column = (uint(element[0]) % MMA_N) & 7u;
  [[unroll]] for (uint i = 0; i < ELEMENTS; ++i) {
    same_mapping = same_mapping && int(element_f[i]) == element[i];
    same_mapping = same_mapping && uint(element[i]) / MMA_N == first_row + 8u * (i >> 2) &&
                   uint(element[i]) % MMA_N == first_column + (i & 1u) + 8u * ((i >> 1) & 1u);
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> acc[ROW_TILES][TILES_N];
  [[unroll]] for (uint part = 0; part < ROW_TILES; ++part)
    [[unroll]] for (uint j = 0; j < TILES_N; ++j) acc[part][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N>(0.0);
  const icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> zero = icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N>(0);

  const uint n_blocks = p.cols / 32u;
  plan_tile_loads(row0);
  fetch_tile_blocks(0, tok0, n_blocks);
  for (uint b0 = 0; b0 < n_blocks; b0 += K_BLOCKS) {
    barrier();  // the previous step's tiles are read (and, at the first, the index tables)
    stage_tile_blocks();
    barrier();
    if (b0 + K_BLOCKS < n_blocks) fetch_tile_blocks(b0 + K_BLOCKS, tok0, n_blocks);  // in flight while this step multiplies

    // The quarter's rows sub_row .. + BM / 2 - 1 (ROW_TILES tiles of 16) times tokens sub_tok .. +31 (TILES_N
    // column tiles; the tokens' int8 rows are the columns of B), block by block.
    [[unroll]] for (uint kb = 0; kb < K_BLOCKS; ++kb) {
      if (b0 + kb >= n_blocks) break;
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> w[ROW_TILES];
      [[unroll]] for (uint part = 0; part < ROW_TILES; ++part)
        coopMatLoadNV(w[part], w_tile, (sub_row + part * 16u) * STRIDE + kb * 8u, STRIDE, false);
      // The block's scales of this lane's two rows a tile and its tokens, each read once.
      float wd[ROW_TILES][2];
      [[unroll]] for (uint part = 0; part < ROW_TILES; ++part)
        [[unroll]] for (uint h = 0; h < 2u; ++h) wd[part][h] = w_scale[kb * BM + sub_row + part * 16u + first_row + 8u * h];
      [[unroll]] for (uint j = 0; j < TILES_N; ++j) {
        icoopmatNV<8, gl_ScopeSubgroup, 32, MMA_N> x;
        coopMatLoadNV(x, x_tile, (sub_tok + j * MMA_N) * STRIDE + kb * 8u, STRIDE, true);
        float xd[ELEMENTS / 2u];  // columns first_column + (m & 1) + 8 (m >> 1): element i's is m = i & 3
        [[unroll]] for (uint m = 0; m < ELEMENTS / 2u; ++m)
          xd[m] = x_scale[kb * BN + sub_tok + j * MMA_N + first_column + (m & 1u) + 8u * (m >> 1)];
        [[unroll]] for (uint part = 0; part < ROW_TILES; ++part) {
          const icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> sums = coopMatMulAddNV(w[part], x, zero);
          [[unroll]] for (uint i = 0; i < ELEMENTS; ++i) {
            acc[part][j][i] = fma(float(sums[i]), wd[part][i >> 2] * xd[i & 3u], acc[part][j][i]);
          }
        }
      }
    }
  }

  // Each element to its (row, token) by the mapping as loaded (the index table is still in shared
  // memory), so that on a device whose layout is not the one assumed every output is NaN.
  coopMatLoadNV(element, index_table, 0, MMA_N, false);
  [[unroll]] for (uint part = 0; part < ROW_TILES; ++part) {
    [[unroll]] for (uint j = 0; j < TILES_N; ++j) {
      [[unroll]] for (uint i = 0; i < ELEMENTS; ++i) {
        const uint row = row0 + sub_row + part * 16u + uint(element[i]) / MMA_N;
        const uint t = tok0 + sub_tok + j * MMA_N + uint(element[i]) % MMA_N;
        if (row < p.n_out && t < p.n_tokens) {  // (not `continue`: spirv-opt does not unroll a loop with one)
          bool valid = false;
          weight_row(row, valid);
          F32Ptr(p.dst + (uint64_t(t) * p.dst_stride + row) * 4u).v[0] = valid && same_mapping ? acc[part][j][i] : nan_value();
        }
      }
    }
  }
}
