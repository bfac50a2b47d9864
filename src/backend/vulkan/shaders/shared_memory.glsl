// The shared memory of the kernels whose arrays depend on specialization constants, in 4-byte
// words, one macro per array: the shaders size their arrays with them and the host
// (matmul_kernels.cpp, vulkan_backend.cpp) adds them up against a device's
// maxComputeSharedMemorySize, so that what the host checks is what the shaders declare. A shared
// array added to one of these kernels gets its macro here and a place in its kernel's total.
// Plain preprocessor arithmetic on unsigned values, which GLSL and C++ read alike.
#ifndef CHANNEL_SHARED_MEMORY_GLSL
#define CHANNEL_SHARED_MEMORY_GLSL

// quantize_workgroup.glsl: up to `capacity` values and their blocks' inverse scales.
#define SHARED_QUANTIZE_VALUES(capacity) (capacity)
#define SHARED_QUANTIZE_SCALES(capacity) ((capacity) / 32u)
#define SHARED_QUANTIZE_WORDS(capacity) (SHARED_QUANTIZE_VALUES(capacity) + SHARED_QUANTIZE_SCALES(capacity))

// matvec_q.comp with GATED_OUTPUT: the row sums of a workgroup's 64 rows (32 gate rows, then the
// same 32 rows of up) for each of up to 16 tokens (the most a matrix-vector pass takes; the host
// sends larger batches to the matrix kernels).
#define SHARED_GATED_ROWS 64u
#define SHARED_GATED_MAX_TOKENS 16u
#define SHARED_GATED_SUMS (SHARED_GATED_MAX_TOKENS * SHARED_GATED_ROWS)

// attention.comp: `tokens` query rows of max_head_dim + 4 values (rows of whole vec4s, padded off
// the next row's banks), a tile of 64 cells' scores per token, the tile's slots, four values per
// token (running maximum, sum, rescale, live), and the Q8_0 staging of one head.
#define SHARED_ATTENTION_TILE_CELLS 64u
#define SHARED_ATTENTION_QUERY(tokens, max_head_dim) ((tokens) * (((max_head_dim) + 3u) / 4u * 4u + 4u))
#define SHARED_ATTENTION_TILE(tokens) ((tokens) * SHARED_ATTENTION_TILE_CELLS)
#define SHARED_ATTENTION_WORDS(tokens, max_head_dim)                                        \
  (SHARED_ATTENTION_QUERY(tokens, max_head_dim) + SHARED_ATTENTION_TILE(tokens) +           \
   SHARED_ATTENTION_TILE_CELLS + 4u * (tokens) + SHARED_QUANTIZE_WORDS(max_head_dim))

// attention_rows.comp: the query (max_head_dim values), a batch's 64 partial sums and score per
// key and its values (f16 pairs), and the Q8_0 staging of one head.
#define SHARED_ROWS_QUERY(max_head_dim) (max_head_dim)
#define SHARED_ROWS_SLOT_SUMS(batch) ((batch) * 64u)
#define SHARED_ROWS_SCORES(batch) (batch)
#define SHARED_ROWS_VALUES(batch, max_head_dim) ((batch) * ((max_head_dim) / 2u))
#define SHARED_ROWS_WORDS(batch, max_head_dim)                                               \
  (SHARED_ROWS_QUERY(max_head_dim) + SHARED_ROWS_SLOT_SUMS(batch) + SHARED_ROWS_SCORES(batch) + \
   SHARED_ROWS_VALUES(batch, max_head_dim) + SHARED_QUANTIZE_WORDS(max_head_dim))

// attention_combine.comp: each chunk's maximum and sum, each group's (of 64 invocations, one per
// dim of the workgroup's slice) maximum, sum and merged values, and the Q8_0 staging of a slice.
// A workgroup merges SHARED_COMBINE_SLICE_DIMS dims of a head (the host's dispatch counts them).
#define SHARED_COMBINE_SLICE_DIMS 64u
#define SHARED_COMBINE_CHUNKS(max_chunks) (max_chunks)
#define SHARED_COMBINE_GROUPS(groups) (groups)
#define SHARED_COMBINE_VALUES(groups) ((groups) * SHARED_COMBINE_SLICE_DIMS)
#define SHARED_COMBINE_WORDS(groups, max_chunks)                                                     \
  (2u * SHARED_COMBINE_CHUNKS(max_chunks) + 2u * SHARED_COMBINE_GROUPS(groups) +                   \
   SHARED_COMBINE_VALUES(groups) + SHARED_QUANTIZE_WORDS(SHARED_COMBINE_SLICE_DIMS))

// matmul.comp (Q4_0 / Q8_0): per step k_blocks blocks of `rows` weight rows and `tokens` token
// rows, 8 packed words padded to 9 (distinct banks for the tile's 16 row groups) and a scale each.
#define SHARED_MATMUL_STRIDE 9u
#define SHARED_MATMUL_TILE(k_blocks, rows) ((k_blocks) * (rows) * SHARED_MATMUL_STRIDE)
#define SHARED_MATMUL_SCALES(k_blocks, rows) ((k_blocks) * (rows))
#define SHARED_MATMUL_WORDS(k_blocks, rows, tokens)                                         \
  (SHARED_MATMUL_TILE(k_blocks, rows) + SHARED_MATMUL_SCALES(k_blocks, rows) +              \
   SHARED_MATMUL_TILE(k_blocks, tokens) + SHARED_MATMUL_SCALES(k_blocks, tokens))

// matmul_coop.comp: `rows` weight and `tokens` token rows of k_blocks blocks (8 words each, 4 of
// padding so that rows start 16-byte aligned and 4 banks apart), their scales, and the int32 and
// f32 index tables of a 16 x mma_n product tile.
#define SHARED_COOP_STRIDE(k_blocks) ((k_blocks) * 8u + 4u)
#define SHARED_COOP_INDEX_TABLE(mma_n) (16u * (mma_n))
#define SHARED_COOP_WORDS(k_blocks, rows, tokens, mma_n)                                   \
  (((rows) + (tokens)) * SHARED_COOP_STRIDE(k_blocks) + (k_blocks) * ((rows) + (tokens)) + \
   2u * SHARED_COOP_INDEX_TABLE(mma_n))

#endif  // CHANNEL_SHARED_MEMORY_GLSL
