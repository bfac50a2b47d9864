// The Gemma chat template for a single user turn, as the models' own templates render it with
// add_generation_prompt (and thinking off for Gemma 4). Special tokens are found by name in the
// vocabulary, never assumed by id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace channel {

// Text of one user turn followed by the opening of the model's turn (without BOS).
std::string render_user_turn(ModelArch arch, std::string_view user_text);

// Tokens that end the model's turn: EOS and the end-of-turn token (`<turn|>` in Gemma 4,
// `<end_of_turn>` in Gemma 3) where the vocabulary has them.
std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, ModelArch arch);

}  // namespace channel
