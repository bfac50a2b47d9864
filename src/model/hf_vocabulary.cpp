#include "model/hf_vocabulary.h"

#include <array>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/mapped_file.h"
#include "model/json_file.h"
#include "model/sentencepiece_model.h"

namespace channel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// gguf-py's TokenType (tokenizer.ggml.token_type values).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct TokenList {
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<int32_t> types;

  void push(std::string text, float score, int32_t type) {
    texts.push_back(std::move(text));
    scores.push_back(score);
    types.push_back(type);
  }
};

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t at = text.find(from); at != std::string_view::npos; at = text.find(from)) {
    out.append(text.substr(0, at)).append(to);
    text.remove_prefix(at + from.size());
  }
  return out.append(text);
}

// A JSON file that may be absent (null then).
json optional_json_file(const fs::path& path) { return fs::exists(path) ? read_json_file(path) : json(); }

// A special-token entry of tokenizer_config.json: a string or a serialized AddedToken.
std::optional<std::string> token_content(const json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") && entry["content"].is_string()) return entry["content"].get<std::string>();
  return std::nullopt;
}

constexpr std::array<std::string_view, 7> kSpecialTypes = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};

// transformers' all_special_tokens: the named special tokens, additional_special_tokens and
// (transformers 5) extra_special_tokens, from tokenizer_config.json and special_tokens_map.json.
std::set<std::string> special_token_texts(const json& tokenizer_config, const json& special_tokens_map) {
  std::set<std::string> texts;
  const auto add = [&](const json& entry) {
    if (auto content = token_content(entry)) texts.insert(*content);
  };
  for (const json* source : {&tokenizer_config, &special_tokens_map}) {
    if (!source->is_object()) continue;
    for (std::string_view type : kSpecialTypes) {
      if (const auto it = source->find(fmt::format("{}_token", type)); it != source->end()) add(*it);
    }
    for (const char* list : {"additional_special_tokens", "extra_special_tokens"}) {
      const auto it = source->find(list);
      if (it == source->end()) continue;
      if (it->is_array() || it->is_object()) {
        for (const json& entry : *it) add(entry);  // an object's values: name -> token
      }
    }
  }
  return texts;
}

// LlamaHfVocab.get_token_type.
int32_t hf_token_type(const std::string& text, bool special) {
  static const std::regex byte_token("<0x[0-9A-Fa-f]{2}>");
  if (std::regex_match(text, byte_token)) return kByte;
  return special ? kControl : kNormal;
}

// Gemma4Model.set_vocab: tokens the chat parser must see, always rendered.
bool always_rendered(std::string_view text) {
  for (std::string_view t : {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>"}) {
    if (text == t) return true;
  }
  return false;
}

// LlamaHfVocab.all_tokens: the vocabulary by id, then the added tokens past it, by id.
TokenList gemma4_tokens(const JsonObject& tokenizer, const json& tokenizer_config, const json& special_tokens_map) {
  const JsonObject model = tokenizer.object("model");
  if (model.optional_string("type") != "BPE" || !model.optional_boolean("byte_fallback").value_or(false)) {
    fail("{}: Gemma 4's tokenizer is BPE with byte fallback; this one is not", tokenizer.where());
  }
  if (!tokenizer.has("decoder") || !tokenizer.value()["decoder"].is_object() || tokenizer.value()["decoder"].value("type", "") != "Sequence") {
    fail("{}: not a Llama-style BPE tokenizer (its \"decoder\" is not a Sequence), as Gemma 4's is", tokenizer.where());
  }
  const json* vocab = model.find("vocab");
  if (!vocab || !vocab->is_object() || vocab->empty()) fail("{} is not an object of token -> id", model.name("vocab"));
  const size_t n_base = vocab->size();
  std::vector<std::optional<std::string>> by_id(n_base);
  // Puts a token at its id if the vocabulary reaches that far; false for an id past it.
  const auto place = [&](const std::string& text, uint64_t id, const std::string& what) {
    if (id >= by_id.size()) return false;
    if (by_id[id] && *by_id[id] != text) fail("{}: '{}' and '{}' both have id {}", what, *by_id[id], text, id);
    by_id[id] = text;
    return true;
  };
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_unsigned()) fail("{}: the id of '{}' is not a non-negative integer", model.name("vocab"), text);
    if (!place(text, id.get<uint64_t>(), model.name("vocab"))) {
      fail("{}: '{}' has id {}, past the {} tokens", model.name("vocab"), text, id.dump(), n_base);
    }
  }
  // Added tokens past the vocabulary, in id order, must continue it without gaps.
  std::map<uint64_t, std::string> added;
  if (const json* list = tokenizer.find("added_tokens")) {
    if (!list->is_array()) fail("{} is not a list", tokenizer.name("added_tokens"));
    for (const json& entry : *list) {
      const JsonObject token(entry, tokenizer.name("added_tokens"));
      const std::string text = token.string("content");
      const auto id = static_cast<uint64_t>(token.integer("id", 0, INT32_MAX));
      if (!place(text, id, tokenizer.name("added_tokens"))) added.emplace(id, text);
    }
  }
  for (const auto& [id, text] : added) {
    if (id != by_id.size()) fail("{}: added token '{}' has id {}, but the next free id is {}", tokenizer.where(), text, id, by_id.size());
    by_id.push_back(text);
  }

  const std::set<std::string> specials = special_token_texts(tokenizer_config, special_tokens_map);
  std::set<std::string> known;
  TokenList list;
  for (size_t id = 0; id < by_id.size(); ++id) {
    if (!by_id[id]) fail("{}: no token has id {}", tokenizer.where(), id);
    const std::string& text = *by_id[id];
    const bool special = specials.contains(text);
    int32_t type = id < n_base ? hf_token_type(text, special) : (special ? kControl : kUserDefined);
    if (always_rendered(text)) type = kUserDefined;
    list.push(text, -1000.0f, type);
    known.insert(text);
  }
  for (const std::string& special : specials) {
    if (!known.contains(special)) fail("{}: special token '{}' is not in the vocabulary", tokenizer.where(), special);
  }
  return list;
}

// SpecialVocab: merges as "left right"; pairs (transformers 4.45+) with spaces in a part written
// as U+0120 so the separator stays the one space.
std::vector<GgufValue> merges_of(const JsonObject& tokenizer) {
  const json* merges = tokenizer.object("model").find("merges");
  if (!merges || !merges->is_array() || merges->empty()) fail("{} has no merges (Gemma 4's BPE needs them)", tokenizer.where());
  std::vector<GgufValue> out;
  out.reserve(merges->size());
  for (const json& merge : *merges) {
    if (merge.is_string()) {
      out.push_back(GgufValue::string(merge.get<std::string>()));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      const auto part = [&](int i) { return replace_all(merge[i].get<std::string>(), " ", "\xC4\xA0"); };  // U+0120
      out.push_back(GgufValue::string(part(0) + " " + part(1)));
    } else {
      fail("{}: merge {} is neither \"a b\" nor [\"a\", \"b\"]", tokenizer.where(), merge.dump());
    }
  }
  return out;
}

// TextModel.does_token_look_special, for Gemma 3's added_tokens_decoder.
bool looks_special(std::string_view text) {
  if (text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]") return true;
  if (text.starts_with("<|") && text.ends_with("|>")) return true;
  if (text.starts_with("<\xEF\xBD\x9C") && text.ends_with("\xEF\xBD\x9C>")) return true;  // <｜ ... ｜>
  return text.starts_with("<unused") && text.ends_with(">");
}

int32_t sentencepiece_token_type(SentencePiece::Type type) {
  switch (type) {
    case SentencePiece::Type::kUnknown: return kUnknown;
    case SentencePiece::Type::kControl: return kControl;
    case SentencePiece::Type::kUnused: return kUnused;
    case SentencePiece::Type::kByte: return kByte;
    default: return kNormal;  // the converter has no case for USER_DEFINED pieces
  }
}

// TextModel._create_vocab_sentencepiece.
TokenList gemma3_tokens(const fs::path& directory, const JsonObject& hparams, const json& tokenizer_config) {
  const fs::path model_path = directory / "tokenizer.model";
  if (!fs::exists(model_path)) {
    fail("{} has no tokenizer.model: Channel reads a Gemma 3 vocabulary from its SentencePiece model", directory.string());
  }
  const MappedFile mapping(model_path.string());
  const std::vector<SentencePiece> pieces = parse_sentencepiece_model(mapping.bytes(), model_path.string());
  const auto vocab_size = static_cast<size_t>(hparams.integer("vocab_size", 1, 1 << 22));

  TokenList list;
  for (size_t id = 0; id < vocab_size; ++id) list.push(fmt::format("[PAD{}]", id), -10000.0f, kUnused);
  for (size_t id = 0; id < pieces.size() && id < vocab_size; ++id) {
    list.texts[id] = pieces[id].piece;
    list.scores[id] = pieces[id].score;
    list.types[id] = sentencepiece_token_type(pieces[id].type);
  }
  const auto set_added = [&](const std::string& id_text, const std::string& text, int32_t type, const std::string& where) {
    size_t id = 0;
    const auto [end, error] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (error != std::errc() || end != id_text.data() + id_text.size()) fail("{}: '{}' is not a token id", where, id_text);
    if (id >= vocab_size) return;  // the converter ignores ids past the vocabulary
    list.texts[id] = text;
    list.scores[id] = -1000.0f;
    list.types[id] = type;
  };
  const json added_tokens = optional_json_file(directory / "added_tokens.json");
  if (!added_tokens.is_null()) {
    const JsonObject added(added_tokens, (directory / "added_tokens.json").string());
    for (const auto& [text, id] : added.value().items()) {
      if (!id.is_number_unsigned()) fail("{}: the id of '{}' is not a non-negative integer", added.where(), text);
      set_added(std::to_string(id.get<uint64_t>()), text, kUserDefined, added.where());
    }
  }
  if (tokenizer_config.is_object() && tokenizer_config.contains("added_tokens_decoder")) {
    const JsonObject decoder(tokenizer_config["added_tokens_decoder"], "tokenizer_config.json: added_tokens_decoder");
    for (const auto& [id, entry] : decoder.value().items()) {
      const JsonObject token(entry, decoder.name(id));
      std::string text = token.string("content");
      const bool control = token.optional_boolean("special").value_or(false) || looks_special(text);
      if (!control) text = replace_all(text, "\xE2\x96\x81", " ");  // user-defined spaces are pre-normalised
      set_added(id, text, control ? kControl : kUserDefined, decoder.where());
    }
  }
  return list;
}

// gguf-py's key for each special token type that its writer stores (cls has none).
std::optional<std::string> special_id_key(std::string_view type) {
  if (type == "bos" || type == "eos" || type == "pad" || type == "mask") return fmt::format("tokenizer.ggml.{}_token_id", type == "pad" ? "padding" : type);
  if (type == "unk") return "tokenizer.ggml.unknown_token_id";
  if (type == "sep") return "tokenizer.ggml.seperator_token_id";  // sic, gguf-py's spelling
  return std::nullopt;
}

// SpecialVocab._try_load_from_tokenizer_json (the X_token lookups) then _try_load_from_config_json.
void add_special_tokens(std::vector<std::pair<std::string, GgufValue>>& out, const json& tokenizer, const json& tokenizer_config,
                        const json& config, std::optional<size_t> n_vocab) {
  std::map<std::string_view, uint64_t> ids;
  const auto set_id = [&](std::string_view type, const json& id) {
    if (!id.is_number_unsigned() || ids.contains(type)) return;
    if (n_vocab && id.get<uint64_t>() >= *n_vocab) return;
    ids.emplace(type, id.get<uint64_t>());
  };
  const json no_tokens = json::array();
  const json& added = tokenizer.is_object() && tokenizer.contains("added_tokens") ? tokenizer["added_tokens"] : no_tokens;
  if (tokenizer_config.is_object()) {
    for (std::string_view type : kSpecialTypes) {
      const auto entry = tokenizer_config.find(fmt::format("{}_token", type));
      if (entry == tokenizer_config.end()) continue;
      const auto content = token_content(*entry);
      if (!content || !added.is_array()) continue;
      for (const json& token : added) {
        if (token.is_object() && token.value("content", json()) == *content) {
          set_id(type, token.value("id", json()));
          break;
        }
      }
    }
  }
  for (std::string_view type : kSpecialTypes) {
    const std::string key = fmt::format("{}_token_id", type);
    if (config.contains(key) && !config[key].is_null()) {
      set_id(type, config[key]);
    } else if (config.contains("text_config") && config["text_config"].is_object() && config["text_config"].contains(key)) {
      set_id(type, config["text_config"][key]);
    }
  }
  for (std::string_view type : kSpecialTypes) {
    const auto key = special_id_key(type);
    if (key && ids.contains(type)) out.emplace_back(*key, GgufValue::u32(static_cast<uint32_t>(ids.at(type))));
  }
  if (tokenizer_config.is_object()) {
    for (std::string_view type : {"bos", "eos", "sep"}) {
      const auto flag = tokenizer_config.find(fmt::format("add_{}_token", type));
      if (flag != tokenizer_config.end() && flag->is_boolean()) {
        out.emplace_back(fmt::format("tokenizer.ggml.add_{}_token", type), GgufValue::boolean(flag->get<bool>()));
      }
    }
  }
}

template <typename T, typename Make>
GgufValue array_of(GgufValueType type, const std::vector<T>& values, Make make) {
  std::vector<GgufValue> elements;
  elements.reserve(values.size());
  for (const T& v : values) elements.push_back(make(v));
  return GgufValue::array(type, std::move(elements));
}

void add_token_list(std::vector<std::pair<std::string, GgufValue>>& out, const TokenList& list) {
  out.emplace_back("tokenizer.ggml.tokens", array_of(GgufValueType::STRING, list.texts, [](const std::string& t) { return GgufValue::string(t); }));
  out.emplace_back("tokenizer.ggml.scores", array_of(GgufValueType::FLOAT32, list.scores, [](float s) { return GgufValue::f32(s); }));
  out.emplace_back("tokenizer.ggml.token_type", array_of(GgufValueType::INT32, list.types, [](int32_t t) { return GgufValue::i32(t); }));
}

// Sets `key` to a bool, replacing an earlier value (Gemma4Model writes add_bos_token after SpecialVocab).
void set_flag(std::vector<std::pair<std::string, GgufValue>>& out, std::string_view key, bool value) {
  for (auto& [k, v] : out) {
    if (k == key) {
      v = GgufValue::boolean(value);
      return;
    }
  }
  out.emplace_back(std::string(key), GgufValue::boolean(value));
}

using Metadata = std::vector<std::pair<std::string, GgufValue>>;

// Gemma4Model.set_vocab.
Metadata gemma4_vocabulary(const fs::path& directory, const json& tokenizer, const json& tokenizer_config, const json& config) {
  if (tokenizer.is_null()) fail("{} has no tokenizer.json", directory.string());
  if (tokenizer_config.is_null()) fail("{} has no tokenizer_config.json, which names Gemma's special tokens", directory.string());
  const JsonObject tokenizer_object(tokenizer, (directory / "tokenizer.json").string());
  const TokenList list = gemma4_tokens(tokenizer_object, tokenizer_config, optional_json_file(directory / "special_tokens_map.json"));
  Metadata out;
  out.emplace_back("tokenizer.ggml.model", GgufValue::string("gemma4"));
  add_token_list(out, list);
  out.emplace_back("tokenizer.ggml.merges", GgufValue::array(GgufValueType::STRING, merges_of(tokenizer_object)));
  add_special_tokens(out, tokenizer, tokenizer_config, config, std::nullopt);
  set_flag(out, "tokenizer.ggml.add_space_prefix", false);
  set_flag(out, "tokenizer.ggml.add_bos_token", true);
  return out;
}

// Gemma3Model.set_vocab with a tokenizer.model (_set_vocab_sentencepiece).
Metadata gemma3_vocabulary(const fs::path& directory, const json& tokenizer, const json& tokenizer_config, const json& config,
                           const json& hparams) {
  const TokenList list = gemma3_tokens(directory, JsonObject(hparams, (directory / "config.json").string()), tokenizer_config);
  Metadata out;
  out.emplace_back("tokenizer.ggml.model", GgufValue::string("llama"));
  out.emplace_back("tokenizer.ggml.pre", GgufValue::string("default"));
  add_token_list(out, list);
  add_special_tokens(out, tokenizer, tokenizer_config, config, list.texts.size());
  set_flag(out, "tokenizer.ggml.add_space_prefix", false);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> read_hf_vocabulary(const fs::path& directory, const HfModelDescription& model,
                                                                  const json& config) {
  const fs::path tokenizer_config_path = directory / "tokenizer_config.json";
  const json tokenizer = optional_json_file(directory / "tokenizer.json");
  const json tokenizer_config = optional_json_file(tokenizer_config_path);
  if (!tokenizer_config.is_null()) JsonObject(tokenizer_config, tokenizer_config_path.string());  // fails unless an object
  return model.arch == ModelArch::Gemma4 ? gemma4_vocabulary(directory, tokenizer, tokenizer_config, config)
                                         : gemma3_vocabulary(directory, tokenizer, tokenizer_config, config, model.hparams);
}

}  // namespace channel
