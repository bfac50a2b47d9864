// The tokenizer metadata (tokenizer.ggml.*) that llama.cpp's converter writes for a Hugging Face
// Gemma directory, so that the engine's Tokenizer reads a directory as it reads the converted file.
//
// Gemma 4 (Gemma4Model.set_vocab: gguf-py's LlamaHfVocab over transformers' fast tokenizer):
// tokenizer.json's BPE vocabulary with byte fallback, then its added tokens past the vocabulary,
// every score -1000, types BYTE for <0xXX>, CONTROL for the tokenizer's special tokens (the ones
// tokenizer_config.json / special_tokens_map.json name: bos/eos/unk/sep/pad/cls/mask_token,
// additional_special_tokens, extra_special_tokens), USER_DEFINED for other added tokens and for
// the seven tokens Gemma 4's converter always renders (<|channel>, <|tool_call>, ...), NORMAL
// otherwise; the merges, model "gemma4".
//
// Gemma 3 (Gemma3Model.set_vocab with tokenizer.model: _create_vocab_sentencepiece): the
// SentencePiece pieces with their scores and types, padded to the config's vocab_size with
// [PADn] tokens, overridden by added_tokens.json and tokenizer_config.json's
// added_tokens_decoder; model "llama".
//
// Both: special token ids as gguf-py's SpecialVocab finds them (tokenizer_config.json's
// X_token looked up among tokenizer.json's added tokens, else config.json's X_token_id) and
// tokenizer_config.json's add_bos_token / add_eos_token / add_sep_token. Not written: the chat
// template (the engine has its own turn grammar) and SpecialVocab's guesses from a
// TemplateProcessing post-processor.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "model/hf_config.h"

namespace channel {

// `config` is config.json as the file has it (SpecialVocab reads its X_token_id keys itself);
// `model` gives the architecture and, for Gemma 3, the vocab_size the pieces are padded to.
std::vector<std::pair<std::string, GgufValue>> read_hf_vocabulary(const std::filesystem::path& directory,
                                                                  const HfModelDescription& model,
                                                                  const nlohmann::json& config);

}  // namespace channel
