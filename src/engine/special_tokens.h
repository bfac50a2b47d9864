// The ids of the tokens the engine's turn grammar uses, found by name in the vocabulary (never
// assumed): Gemma 4's <|turn>/<turn|>/<|channel>/<channel|>/tool tokens, or Gemma 3's
// <start_of_turn>/<end_of_turn>. A token the vocabulary lacks is -1.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace channel {

struct SpecialTokens {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t pad = -1;
  int32_t turn_open = -1;       // <|turn> (Gemma 3: <start_of_turn>)
  int32_t turn_close = -1;      // <turn|> (Gemma 3: <end_of_turn>)
  int32_t channel_open = -1;    // <|channel>
  int32_t channel_close = -1;   // <channel|>
  int32_t think = -1;           // <|think|>
  int32_t tool_call_open = -1;  // <|tool_call>
  int32_t tool_call_close = -1; // <tool_call|>
  int32_t newline = -1;         // "\n"
  int32_t paragraph = -1;       // "\n\n"
  // Ids never sampled: padding and the multimodal markers a text engine cannot follow up.
  std::vector<int32_t> never_sampled;
  // Self-critique openers ("Wait", "Actually", "But", "However" as the original lists them),
  // masked at the start of a line inside a thought.
  std::vector<int32_t> critique;

  static SpecialTokens find(const Tokenizer& tokenizer, ModelArch arch);
  bool has_thinking() const { return channel_open >= 0 && channel_close >= 0; }
};

}  // namespace channel
