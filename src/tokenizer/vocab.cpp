#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

#include "core/error.h"
#include "tokenizer/attribute_overrides.h"

namespace channel {

namespace {

// GGUF token_type values (llama_token_type).
enum TokenType : int64_t {
  kTypeNormal = 1,
  kTypeUnknown = 2,
  kTypeControl = 3,
  kTypeUserDefined = 4,
  kTypeByte = 6,
};

uint8_t attributes_of_type(int64_t type) {
  switch (type) {
    case kTypeNormal: return token_attr::kNormal;
    case kTypeUnknown: return token_attr::kUnknown;
    case kTypeControl: return token_attr::kControl;
    case kTypeUserDefined: return token_attr::kUserDefined;
    case kTypeByte: return token_attr::kByte;
    default: return 0;  // unused, undefined or out of range
  }
}

const GgufArray* find_array(const GgufFile& file, std::string_view key,
                            std::initializer_list<GgufValueType> element_types) {
  const GgufValue* value = file.find(key);
  if (value == nullptr) {
    return nullptr;
  }
  const GgufArray& array = value->as_array(key);
  for (GgufValueType type : element_types) {
    if (array.element_type == type) {
      return &array;
    }
  }
  fail("metadata key '{}' has an array of the wrong element type {}", key,
       static_cast<uint32_t>(array.element_type));
}

// A per-token array must cover every token (llama.cpp refuses shorter ones too).
void require_per_token(const GgufArray& array, std::string_view key, size_t n_tokens) {
  if (array.elements.size() < n_tokens) {
    fail("metadata key '{}' has {} entries for {} tokens", key, array.elements.size(), n_tokens);
  }
}

void read_tokens(const GgufFile& file, Vocab& vocab) {
  constexpr std::string_view kKey = "tokenizer.ggml.tokens";
  const GgufArray* tokens = find_array(file, kKey, {GgufValueType::STRING});
  if (tokens == nullptr) {
    fail("missing metadata key '{}'", kKey);
  }
  if (tokens->elements.empty() || tokens->elements.size() > static_cast<size_t>(INT32_MAX)) {
    fail("metadata key '{}' has {} tokens", kKey, tokens->elements.size());
  }
  vocab.texts.reserve(tokens->elements.size());
  for (size_t id = 0; id < tokens->elements.size(); ++id) {
    const std::string_view stored = tokens->elements[id].as_string(kKey);
    // llama.cpp renames empty tokens so that every text stays unique.
    const std::string text = stored.empty() ? fmt::format("[EMPTY_{}]", id) : std::string(stored);
    if (vocab.texts.intern(text) != static_cast<int32_t>(id)) {
      fail("token {} repeats the text of token {}", id, vocab.texts.find(text));
    }
  }
}

void read_scores_and_types(const GgufFile& file, Vocab& vocab) {
  const size_t n = vocab.texts.size();

  constexpr std::string_view kScores = "tokenizer.ggml.scores";
  vocab.scores.assign(n, 0.0f);
  if (const GgufArray* scores = find_array(file, kScores, {GgufValueType::FLOAT32, GgufValueType::INT32})) {
    require_per_token(*scores, kScores, n);
    for (size_t id = 0; id < n; ++id) {
      vocab.scores[id] = static_cast<float>(scores->elements[id].as_float(kScores));
    }
  }

  constexpr std::string_view kTypes = "tokenizer.ggml.token_type";
  vocab.attrs.assign(n, token_attr::kNormal);  // llama.cpp's default without the key
  if (const GgufArray* types = find_array(file, kTypes, {GgufValueType::INT32})) {
    require_per_token(*types, kTypes, n);
    for (size_t id = 0; id < n; ++id) {
      vocab.attrs[id] = attributes_of_type(types->elements[id].as_int(kTypes));
    }
  }
}

// llama.cpp keeps the default id when the key is absent or names no token, and drops a default
// that lies outside the vocabulary.
int32_t special_id(const GgufFile& file, std::string_view key, int32_t fallback, int32_t n_vocab) {
  if (const GgufValue* value = file.find(key)) {
    const int64_t id = value->as_int(key);
    if (id >= 0 && id < n_vocab) {
      return static_cast<int32_t>(id);
    }
  }
  return fallback < n_vocab ? fallback : -1;
}

bool flag(const GgufFile& file, std::string_view key, bool fallback) {
  const GgufValue* value = file.find(key);
  return value != nullptr ? value->as_bool(key) : fallback;
}

}  // namespace

Vocab load_vocab(const GgufFile& file) {
  constexpr std::string_view kModelKey = "tokenizer.ggml.model";
  const std::string_view model = file.require(kModelKey).as_string(kModelKey);

  Vocab vocab;
  // Defaults per model from llama.cpp; the file's keys override them below.
  int32_t default_bos = -1;
  int32_t default_eos = -1;
  if (model == "gemma4") {
    vocab.model = TokenizerModel::kGemma4;
  } else if (model == "llama") {
    vocab.model = TokenizerModel::kSentencePiece;
    default_bos = 1;
    default_eos = 2;
    vocab.add_bos = true;
    vocab.add_space_prefix = true;
  } else {
    fail("unsupported tokenizer model '{}' (supported: gemma4, llama)", model);
  }

  read_tokens(file, vocab);
  read_scores_and_types(file, vocab);
  apply_llama_attribute_overrides(file, vocab.texts, vocab.attrs);

  for (int byte = 0; byte < 256; ++byte) {
    vocab.byte_tokens[static_cast<size_t>(byte)] = vocab.texts.find(fmt::format("<0x{:02X}>", byte));
  }

  const int32_t n = vocab.size();
  vocab.bos = special_id(file, "tokenizer.ggml.bos_token_id", default_bos, n);
  vocab.eos = special_id(file, "tokenizer.ggml.eos_token_id", default_eos, n);
  vocab.add_space_prefix = flag(file, "tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  vocab.add_bos = flag(file, "tokenizer.ggml.add_bos_token", vocab.add_bos);
  vocab.add_eos = flag(file, "tokenizer.ggml.add_eos_token", vocab.add_eos);
  if (vocab.model == TokenizerModel::kGemma4) {
    vocab.add_bos = true;  // llama.cpp overrides a false add_bos_token for Gemma 4
  }
  return vocab;
}

}  // namespace channel
