#include "engine/special_tokens.h"

namespace channel {

SpecialTokens SpecialTokens::find(const Tokenizer& tokenizer, ModelArch arch) {
  SpecialTokens t;
  t.bos = tokenizer.bos();
  t.eos = tokenizer.eos();
  t.pad = tokenizer.find_token("<pad>");
  t.newline = tokenizer.find_token("\n");
  t.paragraph = tokenizer.find_token("\n\n");
  if (arch == ModelArch::Gemma3) {
    t.turn_open = tokenizer.find_token("<start_of_turn>");
    t.turn_close = tokenizer.find_token("<end_of_turn>");
  } else {
    t.turn_open = tokenizer.find_token("<|turn>");
    t.turn_close = tokenizer.find_token("<turn|>");
    t.channel_open = tokenizer.find_token("<|channel>");
    t.channel_close = tokenizer.find_token("<channel|>");
    t.think = tokenizer.find_token("<|think|>");
    t.tool_call_open = tokenizer.find_token("<|tool_call>");
    t.tool_call_close = tokenizer.find_token("<tool_call|>");
  }
  if (t.pad >= 0) t.never_sampled.push_back(t.pad);
  for (const char* marker : {"<|image>", "<image|>", "<|audio>", "<audio|>", "<|video>", "<video|>", "<image_soft_token>",
                             "<audio_soft_token>", "<start_of_image>", "<end_of_image>"}) {
    if (const int32_t id = tokenizer.find_token(marker); id >= 0) t.never_sampled.push_back(id);
  }
  // The original masks these ids of the Gemma 4 vocabulary; they are found here by their text.
  for (const char* word : {"Wait", "\u2581Wait", "wait", "\u2581wait", "WAIT", "\u2581WAIT", "Actually", "\u2581Actually",
                           "actually", "\u2581actually", "But", "but", "However", "however"}) {
    if (const int32_t id = tokenizer.find_token(word); id >= 0) t.critique.push_back(id);
  }
  return t;
}

}  // namespace channel
