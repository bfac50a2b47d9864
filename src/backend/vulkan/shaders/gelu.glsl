// GEGLU as llama.cpp's CPU backend evaluates it: the gate rounded to f16 and looked up in the
// table of GELU's f16 results (model/gelu_table.h, the CPU backend's own table, uploaded), the
// result widened and multiplied by up; beyond +-10 the identity and zero. A lookup, not tanh:
// Vulkan's tanh is approximate, and below about -3 GELU's 1 + tanh cancels its error into whole
// f16 steps. Used by geglu.comp and geglu_quantize.comp.

float geglu_value(float gate, float up, uint64_t gelu_table) {
  float activated;
  if (gate <= -10.0) {
    activated = 0.0;
  } else if (gate >= 10.0) {
    activated = gate;
  } else {
    activated = f16_bits_to_f32(uint(U16Ptr(gelu_table).v[f32_to_f16_bits(gate)]));
  }
  return activated * up;
}
