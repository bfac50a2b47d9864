#include "tokenizer/attribute_overrides.h"

#include <span>
#include <string_view>

#include "tokenizer/vocab.h"

namespace channel {

namespace {

// Texts llama.cpp treats as end of generation; each one present is made a control token.
constexpr std::string_view kEndOfGeneration[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[",
};

// gpt-oss channel markers, which llama.cpp always renders: set to user-defined.
constexpr std::string_view kAlwaysRendered[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

// Fill-in-the-middle markers: when the file gives no id for a category, llama.cpp takes the
// first token named like one of these (in its hash-map order; here the lowest id, the same
// whenever a vocabulary has at most one of them) and makes it a control token.
constexpr std::string_view kFimPrefix[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSuffix[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMiddle[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepo[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSeparator[] = {"<|file_sep|>"};

struct FimCategory {
  std::string_view key;
  std::string_view deprecated_key;  // read into the same id by llama.cpp; empty if none
  std::span<const std::string_view> names;
};

constexpr FimCategory kFimCategories[] = {
    {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id", kFimPrefix},
    {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id", kFimSuffix},
    {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id", kFimMiddle},
    {"tokenizer.ggml.fim_pad_token_id", "", kFimPad},
    {"tokenizer.ggml.fim_rep_token_id", "", kFimRepo},
    {"tokenizer.ggml.fim_sep_token_id", "", kFimSeparator},
};

// Whether `key` holds an id inside the vocabulary (llama.cpp ignores one outside it).
bool has_valid_id(const GgufFile& file, std::string_view key, size_t n_vocab) {
  if (key.empty()) {
    return false;
  }
  const GgufValue* value = file.find(key);
  if (value == nullptr) {
    return false;
  }
  const int64_t id = value->as_int(key);
  return id >= 0 && static_cast<uint64_t>(id) < n_vocab;
}

}  // namespace

void apply_llama_attribute_overrides(const GgufFile& file, const StringTable& texts,
                                     std::vector<uint8_t>& attrs) {
  using namespace token_attr;
  const auto present = [&](std::string_view text) { return texts.find(text) >= 0; };

  for (const FimCategory& category : kFimCategories) {
    if (has_valid_id(file, category.key, texts.size()) ||
        has_valid_id(file, category.deprecated_key, texts.size())) {
      continue;
    }
    int32_t first = -1;
    for (std::string_view name : category.names) {
      const int32_t id = texts.find(name);
      if (id >= 0 && (first < 0 || id < first)) {
        first = id;
      }
    }
    if (first >= 0) {
      attrs[static_cast<size_t>(first)] |= kControl;
    }
  }

  for (std::string_view name : kEndOfGeneration) {
    if (const int32_t id = texts.find(name); id >= 0) {
      attrs[static_cast<size_t>(id)] |= kControl;
    }
  }

  for (std::string_view name : kAlwaysRendered) {
    if (const int32_t id = texts.find(name); id >= 0) {
      attrs[static_cast<size_t>(id)] = kUserDefined;
    }
  }

  // o200k_harmony and solar-open end a message with <|end|> but a generation with
  // <|return|>/<|call|> or <|calls|>/<|flush|>; llama.cpp then renders <|end|> as text.
  const bool has_call = present("<|call|>") || present("<|calls|>");
  if (present("<|end|>") && has_call && (present("<|return|>") || present("<|flush|>"))) {
    attrs[static_cast<size_t>(texts.find("<|end|>"))] = kUserDefined;
  }

  // Gemma 4 has a plain-text </s>; llama.cpp makes it normal again when <|tool_response> exists.
  if (present("<|tool_response>") && present("</s>")) {
    attrs[static_cast<size_t>(texts.find("</s>"))] = kNormal;
  }
}

}  // namespace channel
