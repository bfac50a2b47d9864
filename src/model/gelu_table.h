#pragma once

#include <array>
#include <cstdint>

namespace channel {

// Gemma's GELU (tanh approximation) of every f16 input, rounded to f16: the table llama.cpp's CPU
// backend evaluates GEGLU through (the gate rounded to f16, looked up, the result widened). Every
// backend reads this one table, so their gated activations agree bit for bit (a GPU's tanh is
// approximate, and below about -3 GELU's 1 + tanh cancels whatever error it has). Indexed by the
// f16 bits; built on first use.
const std::array<uint16_t, 65536>& gelu_f16_table();

}  // namespace channel
