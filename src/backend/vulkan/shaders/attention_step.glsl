// The parameters of one layer's attention that depend on the step's attention view, read from a
// host-written buffer (shader_push.h AttentionStepParams, written before every step) instead of
// push constants, so that a recorded forward pass replays for any view (VulkanBackend).
struct AttentionStep {
  uint n_view;       // listed slots
  int first_cell;    // llama.cpp's cell of the first listed key (its position on a fresh stream)
  uint scheme;       // 0 one-row, 1 split-KV, 2 tiled
  uint n_chunks;     // split-KV: chunks
  uint chunk_cells;  // split-KV: cells (with first_cell 0: listed keys) per chunk
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer AttentionStepPtr { AttentionStep v; };
