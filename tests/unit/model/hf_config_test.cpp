// config.json -> ModelConfig through the converter's metadata, on configs written the way the
// published checkpoints' are (transformers saves only the keys that differ from its config
// class's defaults), checked against the geometry in shared/reference/gemma-gguf-facts.md.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/hf_config.h"
#include "model/model_config.h"

namespace channel {
namespace {

using nlohmann::json;

// The configuration the GGUF path resolves from the converter's metadata (with a stand-in
// vocabulary: ModelConfig takes the vocabulary size from the token list).
ModelConfig resolve(const json& config) {
  HfModelDescription model = describe_hf_model(config, "config.json");
  model.metadata.emplace_back("tokenizer.ggml.tokens", GgufValue::array(GgufValueType::STRING, {GgufValue::string("a")}));
  return ModelConfig::from_gguf(GgufFile::assemble("config.json", std::move(model.metadata), {}, nullptr));
}

int count_sliding(const ModelConfig& c) {
  int n = 0;
  for (const LayerConfig& l : c.layers) n += l.sliding ? 1 : 0;
  return n;
}

TEST(HfConfig, Gemma3_4bTextConfigOfSixKeys) {
  const json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                       {"text_config",
                        {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"model_type", "gemma3_text"},
                         {"num_hidden_layers", 34}, {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                         {"sliding_window", 1024}}},
                       {"vision_config", {{"hidden_size", 1152}}}};
  const ModelConfig c = resolve(config);
  EXPECT_EQ(c.n_layer, 34);
  EXPECT_EQ(c.n_embd, 2560);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(count_sliding(c), 29);  // 5:1, layers 5, 11, ... global
  EXPECT_FALSE(c.layers[5].sliding);
  for (const LayerConfig& l : c.layers) {
    EXPECT_EQ(l.n_head, 8);
    EXPECT_EQ(l.n_head_kv, 4);
    EXPECT_EQ(l.head_dim, 256);
    EXPECT_EQ(l.n_ff, 10240);
    EXPECT_FLOAT_EQ(l.rope_base, l.sliding ? 1e4f : 1e6f);
    EXPECT_FLOAT_EQ(l.rope_freq_scale, l.sliding ? 1.0f : 0.125f);
  }
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f / 16.0f);
  EXPECT_EQ(c.final_softcap, 0.0f);
  // Gemma3TextConfig's vocab_size, to which the converter pads the SentencePiece vocabulary.
  EXPECT_EQ(describe_hf_model(config, "config.json").hparams["vocab_size"], 262208);
}

TEST(HfConfig, Gemma3_27bScalesQueriesBy168) {
  const json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                       {"text_config",
                        {{"head_dim", 128}, {"hidden_size", 5376}, {"intermediate_size", 21504}, {"num_attention_heads", 32},
                         {"num_hidden_layers", 62}, {"num_key_value_heads", 16}, {"query_pre_attn_scalar", 168},
                         {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}}, {"sliding_window", 1024}}}};
  const HfModelDescription model = describe_hf_model(config, "config.json");
  EXPECT_EQ(model.query_pre_attn_scalar, 168.0);
  const ModelConfig c = resolve(config);
  EXPECT_EQ(c.layers[0].head_dim, 128);
  EXPECT_EQ(c.layers[0].n_head_kv, 16);
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f / std::sqrt(168.0f));
}

// Gemma 4 31B as transformers would save it: every key that differs from Gemma4TextConfig's.
json gemma4_31b() {
  return {{"architectures", {"Gemma4ForConditionalGeneration"}},
          {"text_config",
           {{"hidden_size", 5376}, {"intermediate_size", 21504}, {"num_hidden_layers", 60}, {"num_attention_heads", 32},
            {"num_key_value_heads", 16}, {"num_global_key_value_heads", 4}, {"attention_k_eq_v", true},
            {"sliding_window", 1024}, {"final_logit_softcapping", 30.0}, {"hidden_size_per_layer_input", 0}}}};
}

void expect_31b_geometry(const ModelConfig& c) {
  EXPECT_EQ(c.n_layer, 60);
  EXPECT_EQ(count_sliding(c), 50);
  EXPECT_FALSE(c.layers[59].sliding);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f);
  for (const LayerConfig& l : c.layers) {
    EXPECT_EQ(l.n_head, 32);
    EXPECT_EQ(l.n_head_kv, l.sliding ? 16 : 4);
    EXPECT_EQ(l.head_dim, l.sliding ? 256 : 512);
    EXPECT_EQ(l.n_rot, l.sliding ? 256 : 512);
    EXPECT_FLOAT_EQ(l.rope_base, l.sliding ? 1e4f : 1e6f);
    EXPECT_EQ(l.rope_freq_factors, !l.sliding);
  }
}

TEST(HfConfig, Gemma4_31bFromItsDifferencesToTheDefaults) {
  const json config = gemma4_31b();
  expect_31b_geometry(resolve(config));
  // Proportional RoPE with the default partial_rotary_factor 0.25: 64 of 256 pairs rotate.
  const std::vector<float> freqs = describe_hf_model(config, "config.json").rope_freqs;
  ASSERT_EQ(freqs.size(), 256u);
  EXPECT_EQ(freqs[63], 1.0f);
  EXPECT_EQ(freqs[64], 1e30f);
}

TEST(HfConfig, Gemma4GlobalGeometryFromPerLayerConfig) {
  // What transformers' to_dict() holds instead of global_head_dim / num_global_key_value_heads.
  json config = gemma4_31b();
  config["text_config"].erase("num_global_key_value_heads");
  json per_layer = json::object();
  for (int il = 5; il < 60; il += 6) per_layer[std::to_string(il)] = {{"head_dim", 512}, {"num_key_value_heads", 4}};
  config["text_config"]["per_layer_config"] = per_layer;
  expect_31b_geometry(resolve(config));
}

TEST(HfConfig, Gemma4GlobalKvHeadsOnlyWithKEqualsV) {
  // Gemma4TextConfig applies num_global_key_value_heads to the global layers only when
  // attention_k_eq_v says their V is their K.
  json config = gemma4_31b();
  config["text_config"]["attention_k_eq_v"] = false;
  const ModelConfig c = resolve(config);
  for (const LayerConfig& l : c.layers) EXPECT_EQ(l.n_head_kv, 16);
}

TEST(HfConfig, Gemma4LastLayerIsGlobalWhateverLayerTypesSay) {
  json config = gemma4_31b();
  config["text_config"]["num_hidden_layers"] = 3;
  config["text_config"]["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention"};
  const ModelConfig c = resolve(config);
  EXPECT_TRUE(c.layers[1].sliding);
  EXPECT_FALSE(c.layers[2].sliding);
}

TEST(HfConfig, Gemma4WithoutHiddenSizePerLayerInputIsAnEModel) {
  // Gemma4TextConfig's default is 256: a config that leaves it out describes per-layer embeddings.
  json config = gemma4_31b();
  config["text_config"].erase("hidden_size_per_layer_input");
  EXPECT_EQ(resolve(config).n_embd_per_layer, 256);
}

// layer_types as the published configs list them: `period` - 1 sliding layers, then a global one.
json layer_types(int n_layer, int period) {
  json types = json::array();
  for (int il = 0; il < n_layer; ++il) types.push_back((il + 1) % period ? "sliding_attention" : "full_attention");
  return types;
}

// Layer il is global iff (il + 1) % period == 0, and every layer has Gemma 4's head sizes (256
// sliding, 512 global) with n_head query heads and the given KV heads.
void expect_gemma4_layers(const ModelConfig& c, int period, int n_head, int kv_sliding, int kv_global) {
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerConfig& l = c.layers[il];
    EXPECT_EQ(l.sliding, (il + 1) % period != 0) << "layer " << il;
    EXPECT_EQ(l.n_head, n_head);
    EXPECT_EQ(l.n_head_kv, l.sliding ? kv_sliding : kv_global);
    EXPECT_EQ(l.head_dim, l.sliding ? 256 : 512);
  }
}

// Gemma 4 E2B's config.json (text_config as published: facts §3.1, 35 layers of 4 sliding : 1
// global, 20 KV-shared layers with the double-wide MLP, per-layer embeddings of 256).
json gemma4_e2b() {
  return {{"architectures", {"Gemma4ForConditionalGeneration"}},
          {"text_config",
           {{"hidden_size", 1536}, {"intermediate_size", 6144}, {"num_hidden_layers", 35}, {"num_attention_heads", 8},
            {"num_key_value_heads", 1}, {"head_dim", 256}, {"global_head_dim", 512}, {"num_global_key_value_heads", nullptr},
            {"attention_k_eq_v", false}, {"sliding_window", 512}, {"vocab_size", 262144},
            {"vocab_size_per_layer_input", 262144}, {"hidden_size_per_layer_input", 256}, {"num_kv_shared_layers", 20},
            {"use_double_wide_mlp", true}, {"max_position_embeddings", 131072}, {"final_logit_softcapping", 30.0},
            {"layer_types", layer_types(35, 5)},
            {"rope_parameters",
             {{"full_attention", {{"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}, {"rope_type", "proportional"}}},
              {"sliding_attention", {{"rope_theta", 1e4}, {"rope_type", "default"}}}}}}},
          {"vision_config", {{"hidden_size", 768}}},
          {"audio_config", {{"hidden_size", 1024}}}};
}

TEST(HfConfig, Gemma4E2bGeometry) {
  const ModelConfig c = resolve(gemma4_e2b());
  EXPECT_EQ(c.n_layer, 35);
  EXPECT_EQ(c.n_embd, 1536);
  EXPECT_EQ(count_sliding(c), 28);
  expect_gemma4_layers(c, 5, 8, 1, 1);
  EXPECT_EQ(c.n_embd_per_layer, 256);
  EXPECT_EQ(c.n_kv_layers, 15);  // 20 KV-shared layers
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_FALSE(c.has_experts());
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerConfig& l = c.layers[il];
    EXPECT_EQ(l.n_ff, il < 15 ? 6144 : 12288) << "layer " << il;  // double-wide on the shared layers
    // Shared layers read the last KV layer of their type: 13 (sliding) or 14 (global).
    EXPECT_EQ(l.kv_layer, il < 15 ? il : (l.sliding ? 13 : 14)) << "layer " << il;
  }
}

TEST(HfConfig, Gemma4E4bGeometry) {
  // facts §3.1: 42 layers of 5 sliding : 1 global, 18 KV-shared, a uniform FFN of 10240.
  const json config = {
      {"architectures", {"Gemma4ForConditionalGeneration"}},
      {"text_config",
       {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"num_hidden_layers", 42}, {"num_attention_heads", 8},
        {"num_key_value_heads", 2}, {"sliding_window", 512}, {"hidden_size_per_layer_input", 256},
        {"num_kv_shared_layers", 18}, {"final_logit_softcapping", 30.0}, {"layer_types", layer_types(42, 6)}}}};
  const ModelConfig c = resolve(config);
  EXPECT_EQ(c.n_layer, 42);
  EXPECT_EQ(c.n_embd, 2560);
  EXPECT_EQ(count_sliding(c), 35);
  expect_gemma4_layers(c, 6, 8, 2, 2);
  EXPECT_EQ(c.n_embd_per_layer, 256);
  EXPECT_EQ(c.n_kv_layers, 24);
  for (const LayerConfig& l : c.layers) EXPECT_EQ(l.n_ff, 10240);
}

// Gemma 4 12B's config.json, the "unified" encoder-free model (facts §3.1's 12B row): the
// text_config that transformers' gemma4_unified/convert_gemma4_unified_weights.py builds for its
// gemma-4-12b variant (including the keys it writes "for BC: not used by the model"), under the
// Gemma4UnifiedConfig top level with the vision and audio embedders' configs.
json gemma4_12b() {
  return {{"architectures", {"Gemma4UnifiedForConditionalGeneration"}},
          {"model_type", "gemma4_unified"},
          {"text_config",
           {{"model_type", "gemma4_unified_text"}, {"hidden_size", 3840}, {"intermediate_size", 15360},
            {"num_hidden_layers", 48}, {"layer_types", layer_types(48, 6)}, {"num_attention_heads", 16},
            {"num_key_value_heads", 8}, {"num_global_key_value_heads", 1}, {"attention_k_eq_v", true},
            {"use_bidirectional_attention", "vision"}, {"num_kv_shared_layers", 0}, {"use_double_wide_mlp", false},
            {"final_logit_softcapping", 30.0},
            {"rope_parameters",
             {{"full_attention", {{"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}, {"rope_type", "proportional"}}},
              {"sliding_attention", {{"rope_theta", 1e4}, {"rope_type", "default"}}}}},
            {"vocab_size_per_layer_input", 0}, {"hidden_size_per_layer_input", 0}, {"enable_moe_block", false},
            {"num_experts", nullptr}, {"top_k_experts", nullptr}, {"moe_intermediate_size", nullptr}}},
          {"vision_config", {{"model_type", "gemma4_unified_vision"}, {"mm_embed_dim", 3840}}},
          {"audio_config", {{"model_type", "gemma4_unified_audio"}, {"audio_embed_dim", 640}}}};
}

// facts §3.1: 48 layers (40 sliding + 8 global, 5:1), width 3840, FFN 15360, 16 query heads, 8 KV
// heads on sliding layers and 1 on global ones (whose V is their K), head sizes 256 / 512, window
// 1024, final softcap 30; the rest is Gemma 4's (§3.2): RoPE 1e4 full on sliding layers, 1e6
// proportional on global ones, attention scale 1, no per-layer embeddings, no experts, no KV
// sharing. The context, 262144, is Gemma4UnifiedTextConfig's default (the facts give none).
void expect_12b_geometry(const ModelConfig& c) {
  EXPECT_EQ(c.arch, ModelArch::Gemma4);
  EXPECT_EQ(c.n_layer, 48);
  EXPECT_EQ(c.n_embd, 3840);
  EXPECT_EQ(count_sliding(c), 40);
  expect_gemma4_layers(c, 6, 16, 8, 1);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(c.n_ctx_train, 262144);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f);
  EXPECT_FALSE(c.has_per_layer_embeddings());
  EXPECT_FALSE(c.has_experts());
  EXPECT_EQ(c.n_kv_layers, 48);
  for (const LayerConfig& l : c.layers) {
    EXPECT_EQ(l.n_ff, 15360);
    EXPECT_EQ(l.n_rot, l.sliding ? 256 : 512);
    EXPECT_FLOAT_EQ(l.rope_base, l.sliding ? 1e4f : 1e6f);
    EXPECT_FLOAT_EQ(l.rope_freq_scale, 1.0f);
    EXPECT_EQ(l.rope_freq_factors, !l.sliding);
  }
}

TEST(HfConfig, Gemma4_12bUnifiedGeometry) {
  const json config = gemma4_12b();
  expect_12b_geometry(resolve(config));
  const HfModelDescription model = describe_hf_model(config, "config.json");
  EXPECT_EQ(model.hparams["vocab_size"], 262144);  // Gemma4UnifiedTextConfig's, the GGUF vocabulary's size
  EXPECT_EQ(model.hparams["attention_k_eq_v"], true);
  EXPECT_FALSE(model.norm_weights_plus_one);
  // Proportional RoPE, partial_rotary_factor 0.25 of 512: 64 of 256 pairs rotate.
  ASSERT_EQ(model.rope_freqs.size(), 256u);
  EXPECT_EQ(model.rope_freqs[63], 1.0f);
  EXPECT_EQ(model.rope_freqs[64], 1e30f);
}

TEST(HfConfig, Gemma4_12bFromTheUnifiedClassDefaults) {
  // As Gemma4UnifiedTextConfig would save it: only the keys that differ from its defaults (no
  // sliding_window, context, per-layer-input or expert keys), the global layers' geometry as
  // per_layer_config entries.
  json config = gemma4_12b();
  json& text = config["text_config"];
  for (const char* key : {"num_global_key_value_heads", "use_bidirectional_attention", "num_kv_shared_layers",
                          "use_double_wide_mlp", "rope_parameters", "vocab_size_per_layer_input",
                          "hidden_size_per_layer_input", "enable_moe_block", "num_experts", "top_k_experts",
                          "moe_intermediate_size"}) {
    text.erase(key);
  }
  json per_layer = json::object();
  for (int il = 5; il < 48; il += 6) per_layer[std::to_string(il)] = {{"head_dim", 512}, {"num_key_value_heads", 1}};
  text["per_layer_config"] = per_layer;
  expect_12b_geometry(resolve(config));
}

// Gemma 4 26B-A4B's text_config: every key that differs from Gemma4TextConfig's (facts §3.1).
json gemma4_26b_a4b() {
  return {{"architectures", {"Gemma4ForConditionalGeneration"}},
          {"text_config",
           {{"hidden_size", 2816}, {"intermediate_size", 2112}, {"num_hidden_layers", 30}, {"num_attention_heads", 16},
            {"num_key_value_heads", 8}, {"num_global_key_value_heads", 2}, {"attention_k_eq_v", true},
            {"sliding_window", 1024}, {"final_logit_softcapping", 30.0}, {"hidden_size_per_layer_input", 0},
            {"max_position_embeddings", 262144}, {"enable_moe_block", true}, {"num_experts", 128},
            {"top_k_experts", 8}, {"moe_intermediate_size", 704}}}};
}

TEST(HfConfig, Gemma4_26bA4bGeometry) {
  const json config = gemma4_26b_a4b();
  const ModelConfig c = resolve(config);
  EXPECT_EQ(c.n_layer, 30);
  EXPECT_EQ(c.n_embd, 2816);
  EXPECT_EQ(count_sliding(c), 25);
  expect_gemma4_layers(c, 6, 16, 8, 2);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(c.n_expert, 128);
  EXPECT_EQ(c.n_expert_used, 8);
  EXPECT_FALSE(c.has_per_layer_embeddings());
  EXPECT_EQ(c.n_kv_layers, 30);
  for (const LayerConfig& l : c.layers) EXPECT_EQ(l.n_ff, 2112);  // the dense MLP beside the experts
  // The experts' width: ModelConfig reads it for layers with a router, which this has no tensors of.
  bool found = false;
  for (const auto& [key, value] : describe_hf_model(config, "config.json").metadata) {
    if (key == "gemma4.expert_feed_forward_length") {
      EXPECT_EQ(value.as_int(key), 704);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(HfConfig, Gemma4DenseConfigWritesNoExpertKeys) {
  // to_dict() holds num_experts = None: the converter's find_hparam stops there.
  for (const auto& [key, value] : describe_hf_model(gemma4_31b(), "config.json").metadata) {
    EXPECT_EQ(key.find("expert"), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace channel
