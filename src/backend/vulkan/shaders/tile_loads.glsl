// The block loads of the quantized tiled prefill kernel (matmul.comp; matmul_coop.comp plans the
// same loads in its own copy until its move here is checked on a device with the matrix units): a step of
// K_BLOCKS blocks of 32 values stages BM weight rows and BN token rows, (BM + BN) * K_BLOCKS
// blocks in all, spread over the workgroup as slots id, id + workgroup size, ...; slot
// s < W_SLOTS = BM * K_BLOCKS is weight row s / K_BLOCKS, block s % K_BLOCKS of the step, the
// others the activation blocks the same way. A load's addresses and validity are fixed for the
// whole tile, so each is planned once. Needs quant.glsl and the constants BM, BN, K_BLOCKS.
struct TileLoad {
  bool weights;     // a weight block (else an activation block)
  bool valid;       // its row or token exists (else zeros are staged)
  uint line;        // the weight row or token within the tile
  uint block;       // the block within the step
  uint64_t quants;  // weights: the row's quants and scales (weight_row_address and _scales_)
  uint64_t scales;
};

TileLoad plan_tile_load(uint slot, uint row0, uint tok0) {
  const uint w_slots = BM * K_BLOCKS;
  TileLoad l;
  l.weights = slot < w_slots;
  const uint s = l.weights ? slot : slot - w_slots;
  l.line = s / K_BLOCKS;
  l.block = s % K_BLOCKS;
  l.quants = l.scales = 0;
  if (slot >= (BM + BN) * K_BLOCKS) {
    l.valid = false;
  } else if (l.weights) {
    bool id_valid = false;
    const uint row = row0 + l.line < p.n_out ? weight_row(row0 + l.line, id_valid) : 0u;
    l.valid = row0 + l.line < p.n_out && id_valid;
    l.quants = weight_row_address(row);
    l.scales = weight_scales_address(row);
  } else {
    l.valid = tok0 + l.line < p.n_tokens;
  }
  return l;
}

// Block b0 + l.block of the load's row or token (zeros past the row's blocks or for an invalid
// load): its packed int8 values in q, its scale returned.
float fetch_tile_block(const TileLoad l, uint b0, uint tok0, uint n_blocks, out uint q[8]) {
  const uint b = b0 + l.block;
  if (l.valid && b < n_blocks) {
    return l.weights ? load_weight_block(l.quants, l.scales, b, q) : load_activation_block(tok0 + l.line, b, q);
  }
  for (uint j = 0; j < 8; ++j) q[j] = 0u;
  return 0.0;
}
