// GEGLU as llama.cpp's CPU backend evaluates it (through a table of f16 inputs and f16 outputs,
// ops.cpp geglu): the gate rounded to f16, GELU in f32, the result rounded to f16; beyond +-10
// the identity and zero. Used by geglu.comp and geglu_quantize.comp.

// As the CPU's, operation for operation (precise: no fused multiply-adds the CPU does not make).
float gelu_tanh(float x) {
  const float a = 0.044715, sqrt_2_over_pi = 0.79788456080286535587989211986876;
  precise float inner = sqrt_2_over_pi * x * (1.0 + a * x * x);
  precise float result = 0.5 * x * (1.0 + tanh(inner));
  return result;
}

float geglu_value(float gate, float up) {
  float activated;
  if (gate <= -10.0) {
    activated = 0.0;
  } else if (gate >= 10.0) {
    activated = gate;
  } else {
    const float rounded = f16_bits_to_f32(f32_to_f16_bits(gate));
    activated = f16_bits_to_f32(f32_to_f16_bits(gelu_tanh(rounded)));
  }
  return activated * up;
}
