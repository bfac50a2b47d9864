// The block loads of the quantized prefill kernels (matmul.comp, matmul_coop.comp): a step of
// K_BLOCKS blocks of 32 values stages BM weight rows and BN token rows in shared memory. The
// BM * K_BLOCKS weight blocks are spread over the workgroup as slots id, id + TILE_THREADS, ...
// (slot s: row s / K_BLOCKS, block s % K_BLOCKS of the step), the BN * K_BLOCKS activation blocks
// the same way. A slot's row, token and block follow from (id, load) and constants, so the
// registers hold only the blocks read (Q4_0 as stored nibbles: half of an unpacked block) and one
// weight row per weight load, not addresses: a fetch recomputes those, integer arithmetic being
// cheap beside the registers that would hold them for the whole tile (registers decide how many
// workgroups share a multiprocessor). Every loop over loads is unrolled, so that every array
// index is a constant: an array indexed at run time goes to local memory (NVIDIA's compiler put
// the earlier form's load state there, 720 bytes a thread; see matmul_coop.comp).
// Needs GL_EXT_control_flow_attributes, quant.glsl, matmul_params.glsl, the constants BM, BN, K_BLOCKS, TILE_THREADS, the shared
// arrays w_tile, x_tile (packed int8), w_scale [block][row], x_scale [block][token], and
// uint tile_word(uint line, uint block, uint lines): where the 8 words of block `block` of line
// `line` (a weight row or token; `lines` of them in the tile) start in w_tile / x_tile.
const uint W_SLOTS = BM * K_BLOCKS, X_SLOTS = BN * K_BLOCKS;
const uint W_LOADS = (W_SLOTS + TILE_THREADS - 1u) / TILE_THREADS;
const uint X_LOADS = (X_SLOTS + TILE_THREADS - 1u) / TILE_THREADS;
const uint kNoRow = 0xffffffffu;

uint w_row[W_LOADS];  // each weight load's weight row, or kNoRow (past n_out, a bad row id, no slot)
// The blocks fetched and not yet staged.
uint w_words[W_LOADS][kBlockWords];
float w_d[W_LOADS];
uint x_words[X_LOADS][8];
float x_d[X_LOADS];

uint load_slot(uint l) { return gl_LocalInvocationID.x + TILE_THREADS * l; }

void plan_tile_loads(uint row0) {
  [[unroll]] for (uint l = 0; l < W_LOADS; ++l) {
    const uint line = load_slot(l) / K_BLOCKS;
    bool valid = false;
    const uint row = load_slot(l) < W_SLOTS && row0 + line < p.n_out ? weight_row(row0 + line, valid) : 0u;
    w_row[l] = valid ? row : kNoRow;
  }
}

// Blocks b0 .. b0 + K_BLOCKS - 1 of the tile's rows and tokens into registers; a block that does
// not exist (past the row's blocks, a row or token outside the matrix) gets zero words and scale
// 0, so that it adds nothing to the outputs that are written.
void fetch_tile_blocks(uint b0, uint tok0, uint n_blocks) {
  [[unroll]] for (uint l = 0; l < W_LOADS; ++l) {
    const uint b = b0 + load_slot(l) % K_BLOCKS;
    w_d[l] = 0.0;
    [[unroll]] for (uint j = 0; j < kBlockWords; ++j) w_words[l][j] = 0u;
    if (w_row[l] != kNoRow && b < n_blocks) {
      w_d[l] = load_weight_block_words(weight_row_address(w_row[l]), weight_scales_address(w_row[l]), b, w_words[l]);
    }
  }
  [[unroll]] for (uint l = 0; l < X_LOADS; ++l) {
    const uint t = tok0 + load_slot(l) / K_BLOCKS, b = b0 + load_slot(l) % K_BLOCKS;
    x_d[l] = 0.0;
    [[unroll]] for (uint j = 0; j < 8; ++j) x_words[l][j] = 0u;
    if (load_slot(l) < X_SLOTS && t < p.n_tokens && b < n_blocks) x_d[l] = load_activation_block(t, b, x_words[l]);
  }
}

// The fetched blocks into shared memory (weights unpacked to int8).
void stage_tile_blocks() {
  [[unroll]] for (uint l = 0; l < W_LOADS; ++l) {
    if (load_slot(l) >= W_SLOTS) break;
    const uint line = load_slot(l) / K_BLOCKS, block = load_slot(l) % K_BLOCKS;
    uint q[8];
    unpack_weight_block(w_words[l], q);
    const uint base = tile_word(line, block, BM);
    [[unroll]] for (uint j = 0; j < 8; ++j) w_tile[base + j] = q[j];
    w_scale[block * BM + line] = w_d[l];
  }
  [[unroll]] for (uint l = 0; l < X_LOADS; ++l) {
    if (load_slot(l) >= X_SLOTS) break;
    const uint line = load_slot(l) / K_BLOCKS, block = load_slot(l) % K_BLOCKS;
    const uint base = tile_word(line, block, BN);
    [[unroll]] for (uint j = 0; j < 8; ++j) x_tile[base + j] = x_words[l][j];
    x_scale[block * BN + line] = x_d[l];
  }
}
