#include "engine/chat_template.h"

#include <fmt/format.h>

namespace channel {

std::string render_user_turn(ModelArch arch, std::string_view user_text) {
  if (arch == ModelArch::Gemma3) {
    return fmt::format("<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n", user_text);
  }
  // Gemma 4 with thinking disabled: the template closes an empty thought channel up front.
  return fmt::format("<|turn>user\n{}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", user_text);
}

std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, ModelArch arch) {
  std::vector<int32_t> stops;
  if (tokenizer.eos() >= 0) stops.push_back(tokenizer.eos());
  const int32_t end_of_turn = tokenizer.find_token(arch == ModelArch::Gemma3 ? "<end_of_turn>" : "<turn|>");
  if (end_of_turn >= 0) stops.push_back(end_of_turn);
  return stops;
}

}  // namespace channel
