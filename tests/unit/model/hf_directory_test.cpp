// Hugging Face model directories read as their GGUF conversion: what config.json, the tokenizer
// files and the safetensors tensors become, the converter's value transforms, and the one-line
// refusals of broken or unsupported directories. (The whole-model check, logits of a directory
// against those of the GGUF it was written from, is tests/parity/logits/hf_directory_parity.py.)
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "model/hf_directory.h"
#include "model/model.h"
#include "safetensors_samples.h"
#include "test_models.h"

namespace channel {
namespace {

using nlohmann::json;

struct Tensor {
  std::string dtype = "F32";
  std::vector<int64_t> shape;
  float value = 0.01f;
};

// A tiny directory: Gemma 4 (one sliding layer of head size 4, one global of 8 with V = K) or
// Gemma 3 (two layers, head size 4), a 10-token vocabulary, every weight `value`.
struct TinyDirectory {
  json config;
  std::map<std::string, Tensor> tensors;
  json tokenizer;
  json tokenizer_config;
  bool gemma3 = false;

  static TinyDirectory gemma4() {
    TinyDirectory d;
    d.config = {{"architectures", {"Gemma4ForConditionalGeneration"}},
                {"text_config",
                 {{"hidden_size", 8}, {"intermediate_size", 16}, {"num_hidden_layers", 2}, {"num_attention_heads", 2},
                  {"num_key_value_heads", 1}, {"num_global_key_value_heads", 1}, {"head_dim", 4}, {"global_head_dim", 8},
                  {"layer_types", json::array({"sliding_attention", "full_attention"})}, {"sliding_window", 4},
                  {"final_logit_softcapping", 30.0}, {"num_kv_shared_layers", 0}, {"hidden_size_per_layer_input", 0},
                  {"hidden_activation", "gelu_pytorch_tanh"}, {"vocab_size", 10},
                  {"rope_parameters",
                   {{"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}},
                    {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}}}}},
                {"vision_config", {{"hidden_size", 4}}}};
    d.add_text_tensors("model.language_model.", {4, 8}, /*global_v=*/false);
    d.tensors["model.language_model.layers.0.layer_scalar"] = {"F32", {1}, 0.5f};
    d.tensors["model.language_model.layers.1.layer_scalar"] = {"F32", {}, 0.25f};  // 0-dim: also one value
    d.tensors["model.vision_tower.encoder.weight"] = {"F32", {3}};  // skipped, as the converter skips it
    json vocab = json::object();
    const std::vector<std::string> texts = {"<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<|channel>", "<0x41>", "\u2581a", "a", "\u2581"};
    for (size_t i = 0; i < texts.size(); ++i) vocab[texts[i]] = i;
    d.tokenizer = {{"added_tokens", json::array()},
                   {"decoder", {{"type", "Sequence"}}},
                   {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"vocab", vocab},
                              {"merges", json::array({json::array({"\u2581", "a"}), json::array({"x y", "z"})})}}}};
    for (int id : {0, 1, 2, 3, 4, 5}) {
      d.tokenizer["added_tokens"].push_back({{"id", id}, {"content", texts[id]}, {"special", true}});
    }
    d.tokenizer_config = {{"bos_token", "<bos>"}, {"eos_token", {{"content", "<eos>"}}}, {"pad_token", "<pad>"},
                          {"unk_token", "<unk>"}, {"extra_special_tokens", {{"sot", "<|turn>"}, {"soc", "<|channel>"}}},
                          {"add_bos_token", true}};
    return d;
  }

  static TinyDirectory gemma3_model() {
    TinyDirectory d;
    d.gemma3 = true;
    d.config = {{"architectures", {"Gemma3ForCausalLM"}}, {"hidden_size", 8}, {"intermediate_size", 16},
                {"num_hidden_layers", 2}, {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"head_dim", 4},
                {"sliding_window", 4}, {"sliding_window_pattern", 2}, {"query_pre_attn_scalar", 4},
                {"rope_theta", 1e6}, {"rope_local_base_freq", 1e4},
                {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}, {"vocab_size", 10},
                {"final_logit_softcapping", nullptr}, {"attn_logit_softcapping", nullptr}};
    d.add_text_tensors("model.", {4, 4}, /*global_v=*/true);
    d.tokenizer_config = {{"bos_token", "<bos>"}, {"add_bos_token", true}};
    return d;
  }

  void add_text_tensors(const std::string& prefix, std::array<int64_t, 2> head_dims, bool global_v) {
    tensors[prefix + "embed_tokens.weight"] = {"F32", {12, 8}};  // 2 rows past the vocabulary
    tensors[prefix + "norm.weight"] = {"F32", {8}};
    for (int il = 0; il < 2; ++il) {
      const std::string l = prefix + "layers." + std::to_string(il) + ".";
      const int64_t hd = head_dims[il];
      for (const char* norm : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"}) {
        tensors[l + norm + ".weight"] = {"F32", {8}};
      }
      tensors[l + "self_attn.q_proj.weight"] = {"F32", {2 * hd, 8}};
      tensors[l + "self_attn.k_proj.weight"] = {"F32", {hd, 8}};
      if (il == 0 || global_v) tensors[l + "self_attn.v_proj.weight"] = {"F32", {hd, 8}};
      tensors[l + "self_attn.o_proj.weight"] = {"F32", {8, 2 * hd}};
      tensors[l + "self_attn.q_norm.weight"] = {"F32", {hd}};
      tensors[l + "self_attn.k_norm.weight"] = {"F32", {hd}};
      tensors[l + "mlp.gate_proj.weight"] = {"BF16", {16, 8}};
      tensors[l + "mlp.up_proj.weight"] = {"F16", {16, 8}};
      tensors[l + "mlp.down_proj.weight"] = {"F32", {8, 16}};
    }
  }

  // tokenizer.model: a SentencePiece ModelProto of 10 pieces (field 1: piece 1, score 2, type 3).
  static std::string sentencepiece_model() {
    const auto varint = [](uint64_t v) {
      std::string out;
      do {
        out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
      } while (v);
      return out;
    };
    const auto field = [&](int number, const std::string& payload) { return varint(number << 3 | 2) + varint(payload.size()) + payload; };
    std::string model;
    const std::vector<std::pair<std::string, int>> pieces = {{"<pad>", 3}, {"<eos>", 3}, {"<bos>", 3}, {"<unk>", 2}, {"<0x41>", 6},
                                                             {"\u2581a", 1}, {"a", 1}, {"\u2581", 1}, {"b", 1}, {"<mask>", 4}};
    for (size_t i = 0; i < pieces.size(); ++i) {
      const float score = -static_cast<float>(i);
      std::string score_bytes(4, '\0');
      std::memcpy(score_bytes.data(), &score, 4);
      model += field(1, field(1, pieces[i].first) + varint(2 << 3 | 5) + score_bytes + varint(3 << 3) + varint(pieces[i].second));
    }
    return model;
  }

  void write(const testing::TempDir& dir) const {
    std::ofstream(dir.file("config.json")) << config.dump();
    if (!tokenizer.is_null()) std::ofstream(dir.file("tokenizer.json")) << tokenizer.dump();
    if (!tokenizer_config.is_null()) std::ofstream(dir.file("tokenizer_config.json")) << tokenizer_config.dump();
    if (gemma3) std::ofstream(dir.file("tokenizer.model"), std::ios::binary) << sentencepiece_model();
    json header = json::object();
    std::vector<uint8_t> data;
    for (const auto& [name, t] : tensors) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      const size_t begin = data.size();
      for (int64_t i = 0; i < n; ++i) {
        if (t.dtype == "F32" || t.dtype == "I32") {
          const auto bits = std::bit_cast<uint32_t>(t.value);
          for (int b = 0; b < 4; ++b) data.push_back(static_cast<uint8_t>(bits >> (8 * b)));
        } else {
          const uint16_t bits = t.dtype == "BF16" ? f32_to_bf16(t.value) : f32_to_f16(t.value);
          data.push_back(static_cast<uint8_t>(bits));
          data.push_back(static_cast<uint8_t>(bits >> 8));
        }
      }
      header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
    }
    const std::vector<uint8_t> bytes = test::safetensors_bytes(header.dump(), data);
    std::ofstream(dir.file("model.safetensors"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
};

// The error Model::load gives for the directory (after `damage`, if any, to its files), which
// must be one line; "(accepted)" if it loads.
std::string refusal(const TinyDirectory& d, const std::function<void(const testing::TempDir&)>& damage = {}) {
  testing::TempDir dir;
  d.write(dir);
  if (damage) damage(dir);
  try {
    Model::load(dir.file(""));
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  return "(accepted)";
}

int64_t token_type(const GgufFile& file, int id) {
  return file.require("tokenizer.ggml.token_type").as_array("types").elements.at(id).as_int("type");
}

TEST(HfDirectory, Gemma4DirectoryIsItsConversion) {
  testing::TempDir dir;
  TinyDirectory::gemma4().write(dir);
  const auto model = Model::load(dir.file(""));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, ModelArch::Gemma4);
  EXPECT_EQ(c.n_vocab, 10);
  EXPECT_EQ(model->token_embedding().rows, 10);  // the 2 rows past the vocabulary are cut off
  EXPECT_TRUE(model->output_tied());
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_TRUE(c.layers[0].sliding);
  EXPECT_FALSE(c.layers[1].sliding);
  EXPECT_EQ(c.layers[0].head_dim, 4);
  EXPECT_EQ(c.layers[1].head_dim, 8);
  EXPECT_EQ(c.sliding_window, 4);
  EXPECT_FLOAT_EQ(c.layers[0].rope_base, 1e4f);
  EXPECT_FLOAT_EQ(c.layers[1].rope_base, 1e6f);
  // Proportional RoPE with factor 0.25 over 8 dims: 1 of 4 pairs rotates.
  EXPECT_EQ(model->layers()[1].rope_freq_factors, (std::vector<float>{1.0f, 1e30f, 1e30f, 1e30f}));
  EXPECT_TRUE(model->layers()[0].wv.has_value());
  EXPECT_FALSE(model->layers()[1].wv.has_value());  // attention_k_eq_v
  EXPECT_FLOAT_EQ(model->layers()[0].output_scale, 0.5f);
  EXPECT_FLOAT_EQ(model->layers()[1].output_scale, 0.25f);
  EXPECT_FLOAT_EQ(model->layers()[0].attn_norm[0], 0.01f);  // Gemma 4 norms are used as stored
  EXPECT_EQ(model->layers()[0].ffn_gate.type, GgmlType::BF16);  // matrices keep their stored type
  EXPECT_EQ(model->layers()[0].ffn_up.type, GgmlType::F16);
  EXPECT_EQ(model->gguf().find_tensor("blk.0.attn_q.weight")->dims, (std::vector<int64_t>{8, 8}));
}

TEST(HfDirectory, Gemma4VocabularyAsLlamaHfVocabWritesIt) {
  testing::TempDir dir;
  TinyDirectory::gemma4().write(dir);
  const GgufFile file = open_hf_directory(dir.file(""));
  EXPECT_EQ(file.require("tokenizer.ggml.model").as_string("model"), "gemma4");
  EXPECT_EQ(token_type(file, 2), 3);  // <bos>: named special -> CONTROL
  EXPECT_EQ(token_type(file, 4), 3);  // <|turn>: extra special -> CONTROL
  EXPECT_EQ(token_type(file, 5), 4);  // <|channel>: always rendered -> USER_DEFINED
  EXPECT_EQ(token_type(file, 6), 6);  // <0x41>: BYTE
  EXPECT_EQ(token_type(file, 7), 1);  // ▁a: NORMAL
  EXPECT_EQ(file.require("tokenizer.ggml.scores").as_array("s").elements[7].as_float("s"), -1000.0);
  EXPECT_EQ(file.require("tokenizer.ggml.bos_token_id").as_int("bos"), 2);
  EXPECT_EQ(file.require("tokenizer.ggml.eos_token_id").as_int("eos"), 1);  // from an AddedToken object
  EXPECT_EQ(file.require("tokenizer.ggml.padding_token_id").as_int("pad"), 0);
  EXPECT_TRUE(file.require("tokenizer.ggml.add_bos_token").as_bool("add_bos"));
  const auto& merges = file.require("tokenizer.ggml.merges").as_array("merges").elements;
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges[0].as_string("m"), "\u2581 a");
  EXPECT_EQ(merges[1].as_string("m"), "x\u0120y z");  // a space inside a part is written as U+0120
  EXPECT_EQ(file.find_tensor("model.vision_tower.encoder.weight"), nullptr);
}

TEST(HfDirectory, Gemma3NormsGetPlusOneAsTheConverterComputesIt) {
  // 1 + 2^-11 is exact in f32 but halfway between two F16 values: the converter adds in the
  // stored type for F16 (rounding to even: 1.0) and in f32 for BF16 (widened first) and F32.
  TinyDirectory d = TinyDirectory::gemma3_model();
  const float tiny = 0x1p-11f;
  d.tensors["model.layers.0.input_layernorm.weight"] = {"F16", {8}, tiny};
  d.tensors["model.layers.0.pre_feedforward_layernorm.weight"] = {"BF16", {8}, tiny};
  d.tensors["model.layers.0.post_attention_layernorm.weight"] = {"F32", {8}, tiny};
  d.tensors["model.layers.0.self_attn.q_norm.weight"] = {"F32", {4}, -0.5f};
  testing::TempDir dir;
  d.write(dir);
  const auto model = Model::load(dir.file(""));
  const LayerWeights& w = model->layers()[0];
  EXPECT_EQ(w.attn_norm[0], 1.0f);
  EXPECT_EQ(w.ffn_norm[0], 1.0f + tiny);
  EXPECT_EQ(w.post_attn_norm[0], 1.0f + tiny);
  EXPECT_EQ(w.q_norm[0], 0.5f);
  EXPECT_EQ(model->output_norm()[0], 1.01f);
  EXPECT_EQ(model->layers()[0].wq.cols, 8);  // matrices are not shifted
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, ModelArch::Gemma3);
  EXPECT_TRUE(c.layers[0].sliding);
  EXPECT_FALSE(c.layers[1].sliding);
  EXPECT_FLOAT_EQ(c.layers[0].rope_base, 1e4f);
  EXPECT_FLOAT_EQ(c.layers[1].rope_base, 1e6f);
  EXPECT_FLOAT_EQ(c.layers[1].rope_freq_scale, 0.125f);
  EXPECT_FLOAT_EQ(c.query_scale, 0.5f);
  const GgufFile& file = model->gguf();
  EXPECT_EQ(file.require("tokenizer.ggml.model").as_string("model"), "llama");
  EXPECT_EQ(token_type(file, 3), 2);  // UNKNOWN
  EXPECT_EQ(token_type(file, 4), 6);  // BYTE
  EXPECT_EQ(token_type(file, 9), 1);  // a USER_DEFINED piece: the converter reads it as NORMAL
  EXPECT_EQ(file.require("tokenizer.ggml.scores").as_array("s").elements[5].as_float("s"), -5.0);
}

TEST(HfDirectory, Gemma3AddedTokensOverrideThePieces) {
  // _create_vocab_sentencepiece: added_tokens.json makes USER_DEFINED tokens, then
  // tokenizer_config.json's added_tokens_decoder makes CONTROL ones (special, or looking special)
  // and USER_DEFINED ones with U+2581 written as a space; ids past vocab_size are ignored.
  TinyDirectory d = TinyDirectory::gemma3_model();
  d.tokenizer_config["added_tokens_decoder"] = {
      {"9", {{"content", "<start_of_turn>"}, {"special", true}}},
      {"8", {{"content", "my\u2581word"}, {"special", false}}},
      {"7", {{"content", "<unused3>"}, {"special", false}}},
      {"42", {{"content", "<image_soft_token>"}, {"special", true}}}};
  testing::TempDir dir;
  d.write(dir);
  std::ofstream(dir.file("added_tokens.json")) << R"({"<extra>": 6})";
  const GgufFile file = open_hf_directory(dir.file(""));
  const auto& texts = file.require("tokenizer.ggml.tokens").as_array("t").elements;
  ASSERT_EQ(texts.size(), 10u);
  EXPECT_EQ(texts[6].as_string("t"), "<extra>");
  EXPECT_EQ(token_type(file, 6), 4);
  EXPECT_EQ(texts[7].as_string("t"), "<unused3>");
  EXPECT_EQ(token_type(file, 7), 3);
  EXPECT_EQ(texts[8].as_string("t"), "my word");
  EXPECT_EQ(token_type(file, 8), 4);
  EXPECT_EQ(texts[9].as_string("t"), "<start_of_turn>");
  EXPECT_EQ(token_type(file, 9), 3);
  EXPECT_EQ(file.require("tokenizer.ggml.scores").as_array("s").elements[9].as_float("s"), -1000.0);
}

TEST(HfDirectory, Gemma3VocabularyPaddedToVocabSize) {
  // vocab_size past the SentencePiece pieces (Gemma 3 4B: 262208 for 262144 pieces): [PADn]
  // tokens of type UNUSED fill the rest, and the embedding keeps as many rows.
  TinyDirectory d = TinyDirectory::gemma3_model();
  d.config["vocab_size"] = 12;
  testing::TempDir dir;
  d.write(dir);
  const auto model = Model::load(dir.file(""));
  EXPECT_EQ(model->config().n_vocab, 12);
  EXPECT_EQ(model->token_embedding().rows, 12);
  EXPECT_EQ(model->gguf().require("tokenizer.ggml.tokens").as_array("t").elements[11].as_string("t"), "[PAD11]");
  EXPECT_EQ(token_type(model->gguf(), 11), 5);
}

TinyDirectory changed(TinyDirectory d, const std::function<void(TinyDirectory&)>& change) {
  change(d);
  return d;
}

json& text_config(TinyDirectory& d) { return d.config["text_config"]; }

TEST(HfDirectory, Gemma4EModelTensorsAsTheConverterNamesThem) {
  TinyDirectory d = TinyDirectory::gemma4();
  text_config(d)["hidden_size_per_layer_input"] = 2;
  const std::string p = "model.language_model.";
  d.tensors[p + "embed_tokens_per_layer.weight"] = {"BF16", {10, 4}};  // vocab x (layers * width): not cut
  d.tensors[p + "per_layer_model_projection.weight"] = {"F32", {4, 8}};
  d.tensors[p + "per_layer_projection_norm.weight"] = {"BF16", {2}, 0.5f};
  for (const std::string& l : {p + "layers.0.", p + "layers.1."}) {
    d.tensors[l + "per_layer_input_gate.weight"] = {"F32", {2, 8}};
    d.tensors[l + "per_layer_projection.weight"] = {"F32", {8, 2}};
    d.tensors[l + "post_per_layer_input_norm.weight"] = {"F32", {8}};
  }
  testing::TempDir dir;
  d.write(dir);
  const auto model = Model::load(dir.file(""));
  EXPECT_EQ(model->config().n_embd_per_layer, 2);
  const GgufFile& file = model->gguf();
  EXPECT_EQ(file.find_tensor("per_layer_token_embd.weight")->dims, (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(file.find_tensor("per_layer_token_embd.weight")->type, GgmlType::BF16);
  EXPECT_EQ(file.find_tensor("per_layer_proj_norm.weight")->type, GgmlType::F32);  // a norm: the converter writes F32
  EXPECT_EQ(model->per_layer_inputs().proj_norm, (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(file.find_tensor("blk.1.inp_gate.weight")->dims, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(file.find_tensor("blk.1.proj.weight")->dims, (std::vector<int64_t>{2, 8}));
  EXPECT_NE(file.find_tensor("blk.1.post_norm.weight"), nullptr);
}

TEST(HfDirectory, Gemma4ExpertTensorsAsTheConverterMapsThem) {
  TinyDirectory d = TinyDirectory::gemma4();
  text_config(d).update({{"enable_moe_block", true}, {"num_experts", 2}, {"top_k_experts", 1}, {"moe_intermediate_size", 4}});
  for (const std::string l : {"model.language_model.layers.0.", "model.language_model.layers.1."}) {
    d.tensors[l + "router.proj.weight"] = {"BF16", {2, 8}, 0.5f};
    d.tensors[l + "router.scale"] = {"BF16", {8}, 0.25f};
    d.tensors[l + "router.per_expert_scale"] = {"F32", {2}, 0.75f};
    d.tensors[l + "experts.gate_up_proj"] = {"BF16", {2, 8, 8}};  // experts x (gate, up) x hidden
    d.tensors[l + "experts.down_proj"] = {"F32", {2, 8, 4}};
    for (const char* norm : {"pre_feedforward_layernorm_2", "post_feedforward_layernorm_1", "post_feedforward_layernorm_2"}) {
      d.tensors[l + norm + ".weight"] = {"F32", {8}};
    }
  }
  testing::TempDir dir;
  d.write(dir);
  const auto model = Model::load(dir.file(""));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.n_expert, 2);
  EXPECT_EQ(c.n_expert_used, 1);
  EXPECT_EQ(c.n_ff_exp, 4);
  ASSERT_TRUE(model->layers()[1].experts.has_value());
  const ExpertWeights& e = *model->layers()[1].experts;
  EXPECT_EQ(e.router.type, GgmlType::F32);  // the converter keeps the router in F32
  EXPECT_EQ(e.router_scale, std::vector<float>(8, 0.25f));
  EXPECT_EQ(e.down_scale, (std::vector<float>{0.75f, 0.75f}));
  EXPECT_TRUE(e.fused_gate_up());
  EXPECT_EQ(e.gate_up.type, GgmlType::BF16);  // expert matrices keep their stored type
  EXPECT_EQ(model->gguf().find_tensor("blk.1.ffn_gate_up_exps.weight")->dims, (std::vector<int64_t>{8, 8, 2}));
  EXPECT_EQ(model->gguf().find_tensor("blk.1.ffn_down_exps.weight")->dims, (std::vector<int64_t>{4, 8, 2}));
}

TEST(HfDirectory, Gemma4UnifiedDirectoryIsItsTextDecoder) {
  // The 12B's layout (transformers' gemma4_unified/convert_gemma4_unified_weights.py): the text
  // decoder under model.language_model. as in Gemma4ForConditionalGeneration, and instead of the
  // vision and audio towers these embedders, which the converter's text conversion skips too.
  TinyDirectory d = TinyDirectory::gemma4();
  d.config["architectures"] = {"Gemma4UnifiedForConditionalGeneration"};
  text_config(d).erase("hidden_size_per_layer_input");  // Gemma4UnifiedTextConfig has none: no per-layer inputs
  d.tensors.erase("model.vision_tower.encoder.weight");
  for (const char* name : {"model.vision_embedder.patch_ln1.weight", "model.vision_embedder.patch_dense.weight",
                           "model.vision_embedder.pos_embedding", "model.vision_embedder.pos_norm.weight",
                           "model.embed_vision.embedding_projection.weight", "model.embed_audio.embedding_projection.weight"}) {
    d.tensors[name] = {"F32", {3}};
  }
  testing::TempDir dir;
  d.write(dir);
  const auto model = Model::load(dir.file(""));
  EXPECT_EQ(model->config().arch, ModelArch::Gemma4);
  EXPECT_FALSE(model->config().has_per_layer_embeddings());
  EXPECT_EQ(model->gguf().find_tensor("blk.1.attn_q.weight")->dims, (std::vector<int64_t>{8, 16}));  // 2 heads of 8
  EXPECT_FALSE(model->layers()[1].wv.has_value());  // the global layer's V is its K
}

TEST(HfDirectory, RefusesBrokenDirectoriesInOneLine) {
  const TinyDirectory good = TinyDirectory::gemma4();
  ASSERT_EQ(refusal(good), "(accepted)");
  const auto remove = [](const char* file) { return [file](const testing::TempDir& dir) { std::filesystem::remove(dir.file(file)); }; };
  const auto overwrite = [](const char* file, const char* text) {
    return [file, text](const testing::TempDir& dir) { std::ofstream(dir.file(file)) << text; };
  };
  EXPECT_NE(refusal(good, remove("config.json")).find("has no config.json"), std::string::npos);
  EXPECT_NE(refusal(good, overwrite("config.json", "{\"architectures\": [")).find("config.json is not valid JSON"), std::string::npos);
  EXPECT_NE(refusal(good, remove("tokenizer_config.json")).find("no tokenizer_config.json"), std::string::npos);
  EXPECT_NE(refusal(good, remove("model.safetensors")).find("has neither model.safetensors"), std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors.erase("model.language_model.layers.0.self_attn.q_proj.weight"); }))
                .find("tensor 'blk.0.attn_q.weight' (model.language_model.layers.0.self_attn.q_proj.weight in the directory) "
                      "is missing"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors["model.language_model.layers.0.self_attn.q_proj.weight"].shape = {7, 8}; }))
                .find("'blk.0.attn_q.weight' (model.language_model.layers.0.self_attn.q_proj.weight in the directory) has "
                      "shape 8x7 but the model configuration needs 8x8"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors["model.language_model.norm.weight"].dtype = "I32"; }))
                .find("has dtype 'I32'"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors["model.language_model.embed_tokens.weight"].shape = {9, 8}; }))
                .find("has 9 rows but the vocabulary has 10 tokens"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors["model.language_model.layers.0.self_attn.q_proj.bias"] = {"F32", {8}}; }))
                .find("tensor 'model.language_model.layers.0.self_attn.q_proj.bias' is not one of a Gemma 3 or Gemma 4 text model"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors["language_model.model.norm.weight"] = {"F32", {8}}; }))
                .find("are both output_norm.weight"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { text_config(d)["num_hidden_layers"] = "2"; }))
                .find("\"num_hidden_layers\" must be an integer, not \"2\""),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { text_config(d)["layer_types"] = json::array({"full_attention"}); }))
                .find("must list one type per layer (2)"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { text_config(d)["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; }))
                .find("'yarn' is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tokenizer_config["extra_special_tokens"]["x"] = "<|absent|>"; }))
                .find("special token '<|absent|>' is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tokenizer["model"]["type"] = "Unigram"; })).find("BPE with byte fallback"),
            std::string::npos);
}

TEST(HfDirectory, RefusesUnsupportedModelsNamingWhatIsUnsupported) {
  const TinyDirectory good = TinyDirectory::gemma4();
  EXPECT_NE(refusal(changed(good, [](auto& d) { text_config(d)["use_bidirectional_attention"] = "all"; }))
                .find("makes an encoder"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.config["architectures"] = {"LlamaForCausalLM"}; }))
                .find("architecture 'LlamaForCausalLM' is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { text_config(d)["hidden_activation"] = "relu"; })).find("GELU-tanh"),
            std::string::npos);
}

TEST(HfDirectory, RefusesBrokenGemma3Directories) {
  const TinyDirectory good = TinyDirectory::gemma3_model();
  ASSERT_EQ(refusal(good), "(accepted)");
  EXPECT_NE(refusal(good, [](const testing::TempDir& dir) { std::filesystem::remove(dir.file("tokenizer.model")); })
                .find("has no tokenizer.model"),
            std::string::npos);
  EXPECT_NE(refusal(good, [](const testing::TempDir& dir) { std::filesystem::resize_file(dir.file("tokenizer.model"), 30); })
                .find("runs past the end"),
            std::string::npos);
  // llama.cpp derives Gemma 3's query scale from the geometry (1/sqrt(head_dim) here).
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.config["query_pre_attn_scalar"] = 16; })).find("query_pre_attn_scalar = 16"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.config["attn_logit_softcapping"] = 50.0; })).find("attn_logit_softcapping"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.config["num_experts"] = 4; })).find("Gemma 3 has no mixture-of-experts"),
            std::string::npos);
  EXPECT_NE(refusal(changed(good, [](auto& d) { d.tensors.erase("model.layers.1.self_attn.v_proj.weight"); }))
                .find("tensor 'blk.1.attn_v.weight' (model.layers.1.self_attn.v_proj.weight in the directory) is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace channel
