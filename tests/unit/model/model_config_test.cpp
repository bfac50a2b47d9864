#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "model/model.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

TEST(ModelConfig, Gemma4LayersFromMetadata) {
  TempDir dir;
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.n_layer = 5;
  o.sliding_period = 3;  // layer 2 global, and the last layer (4) is forced global
  const auto model = Model::load(testing::synthesize(dir, o, "g4.gguf"));
  const ModelConfig& c = model->config();
  ASSERT_EQ(c.n_layer, 5);
  const std::vector<bool> sliding = {true, true, false, true, false};
  for (int il = 0; il < 5; ++il) {
    const LayerConfig& l = c.layers[il];
    EXPECT_EQ(l.sliding, sliding[il]) << il;
    EXPECT_EQ(l.head_dim, l.sliding ? o.head_dim : o.head_dim_global) << il;
    EXPECT_EQ(l.n_rot, l.head_dim) << il;
    EXPECT_EQ(l.n_head_kv, l.sliding ? o.n_head_kv : o.n_head_kv_global) << il;
    EXPECT_FLOAT_EQ(l.rope_base, l.sliding ? 1e4f : 1e6f) << il;
    EXPECT_EQ(l.rope_freq_factors, !l.sliding) << il;
    // Global layers of the synthetic Gemma 4 have no attn_v (V = K).
    EXPECT_EQ(model->layers()[il].wv.has_value(), l.sliding) << il;
    EXPECT_EQ(model->layers()[il].rope_freq_factors.size(), l.sliding ? 0u : size_t(o.head_dim_global / 2)) << il;
  }
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_TRUE(c.v_norm);
  // Partial rotation: a quarter of the pairs rotate (factor 1), the rest have factor 1e30.
  const auto& factors = model->layers()[2].rope_freq_factors;
  EXPECT_EQ(factors[0], 1.0f);
  EXPECT_EQ(factors[factors.size() / 4 - 1], 1.0f);
  EXPECT_EQ(factors[factors.size() / 4], 1e30f);
}

TEST(ModelConfig, Gemma3PatternScalingAndQueryScale) {
  TempDir dir;
  SynthOptions o = default_synth_options(ModelArch::Gemma3);
  o.n_layer = 6;
  o.sliding_period = 3;
  const auto model = Model::load(testing::synthesize(dir, o, "g3.gguf"));
  const ModelConfig& c = model->config();
  for (int il = 0; il < 6; ++il) {
    const LayerConfig& l = c.layers[il];
    EXPECT_EQ(l.sliding, il % 3 < 2) << il;
    EXPECT_EQ(l.head_dim, o.head_dim);
    // Linear RoPE scaling (factor 8) applies to global layers only; sliding layers use base 1e4.
    EXPECT_FLOAT_EQ(l.rope_freq_scale, l.sliding ? 1.0f : 1.0f / 8.0f) << il;
    EXPECT_FLOAT_EQ(l.rope_base, l.sliding ? 1e4f : 1e6f) << il;
    EXPECT_FALSE(l.rope_freq_factors);
    EXPECT_TRUE(model->layers()[il].wv.has_value());
  }
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f / std::sqrt(static_cast<float>(o.head_dim)));
  EXPECT_EQ(c.final_softcap, 0.0f);
  EXPECT_FALSE(c.v_norm);
}

// An E-model as the parity tests make it: layers 0, 1 sliding, 2 global, 3, 4 sliding, 5 global;
// the last 3 share KV, as llama.cpp assigns it: sliding ones that of layer 1, the global one 2's.
SynthOptions e_model_options() {
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.n_layer = 6;
  o.sliding_period = 3;
  o.n_embd_per_layer = 32;
  o.n_kv_shared = 3;
  return o;
}

TEST(ModelConfig, Gemma4EModelSharesKvAndHasPerLayerEmbeddings) {
  TempDir dir;
  const SynthOptions o = e_model_options();
  const auto model = Model::load(testing::synthesize(dir, o, "e.gguf"));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.n_embd_per_layer, 32);
  EXPECT_EQ(c.n_kv_layers, 3);
  const std::vector<int> kv_layer = {0, 1, 2, 1, 1, 2};
  for (int il = 0; il < 6; ++il) {
    EXPECT_EQ(c.layers[il].kv_layer, kv_layer[il]) << il;
    EXPECT_EQ(c.owns_kv(il), il < 3) << il;
    // The double-wide FFN of the shared layers comes from the per-layer feed_forward_length.
    EXPECT_EQ(c.layers[il].n_ff, il < 3 ? o.n_ff : 2 * o.n_ff) << il;
    EXPECT_EQ(model->layers()[il].per_layer_gate.rows, 32) << il;
    EXPECT_EQ(model->layers()[il].per_layer_proj.cols, 32) << il;
    EXPECT_EQ(model->layers()[il].wk.rows == 0, il >= 3) << "no attn_k on shared layers: " << il;
  }
  EXPECT_EQ(model->per_layer_inputs().token_embd.cols, 6 * 32);
  EXPECT_EQ(model->per_layer_inputs().model_proj.rows, 6 * 32);
  EXPECT_EQ(model->per_layer_inputs().proj_norm.size(), 32u);
}

TEST(ModelConfig, Gemma4MixtureOfExpertsFromMetadataAndTensors) {
  TempDir dir;
  const SynthOptions o = testing::moe_options();
  const auto model = Model::load(testing::synthesize(dir, o, "moe.gguf"));
  const ModelConfig& c = model->config();
  EXPECT_TRUE(c.has_experts());
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 3);
  EXPECT_EQ(c.n_ff_exp, 64);
  for (int il = 0; il < c.n_layer; ++il) {
    EXPECT_TRUE(c.layers[il].moe) << il;
    EXPECT_EQ(c.layers[il].n_ff, o.n_ff) << "the dense (shared) FFN keeps its width: " << il;
    const ExpertWeights& w = *model->layers()[il].experts;
    EXPECT_EQ(w.router.rows, 8);
    EXPECT_EQ(w.router.type, GgmlType::F32);
    EXPECT_EQ(w.router_scale.size(), size_t(o.n_embd));
    ASSERT_TRUE(w.fused_gate_up());
    // The stacked experts: 8 of 2 * 64 rows, and expert 5 starts 5 * 128 rows in.
    EXPECT_EQ(w.gate_up.rows, 8 * 128);
    EXPECT_EQ(expert_rows(w.gate_up, 8, 5).rows, 128);
    EXPECT_EQ(expert_rows(w.gate_up, 8, 5).data, w.gate_up.row(5 * 128));
    EXPECT_EQ(w.down.cols, 64);
    EXPECT_EQ(w.down.rows, 8 * o.n_embd);
    EXPECT_EQ(w.down_scale.size(), 8u);
    EXPECT_EQ(w.pre_norm_2.size(), size_t(o.n_embd));
  }
  // A dense model has none of it.
  const auto dense = Model::load(testing::synthesize(dir, default_synth_options(ModelArch::Gemma4), "dense.gguf"));
  EXPECT_FALSE(dense->config().has_experts());
  EXPECT_FALSE(dense->layers()[0].experts.has_value());
}

// Rewrites a synthesized model with one metadata key changed.
std::string with_key(const TempDir& dir, const std::string& source, const std::string& key, GgufValue value) {
  const GgufFile file = GgufFile::open(source);
  GgufWriter writer;
  for (const auto& [k, v] : file.metadata()) writer.set(k, v);
  writer.set(key, std::move(value));
  for (const auto& t : file.tensors()) {
    const auto bytes = file.tensor_bytes(t);
    writer.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  const std::string path = dir.file("edited.gguf");
  writer.write(path);
  return path;
}

void expect_refused(const std::string& path, const std::string& words) {
  try {
    Model::load(path);
    FAIL() << "loaded a model that should be refused (" << words << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, RefusesWhatItCannotRun) {
  TempDir dir;
  const std::string g4 = testing::synthesize(dir, default_synth_options(ModelArch::Gemma4), "g4.gguf");
  // Per-layer embeddings without their tensors.
  expect_refused(with_key(dir, g4, "gemma4.embedding_length_per_layer_input", GgufValue::u32(256)),
                 "'blk.0.inp_gate.weight' is missing");
  // 4 of 6 shared: the global layer 2 would reuse layer 1 (llama.cpp's choice), which is sliding.
  expect_refused(with_key(dir, g4, "gemma4.attention.shared_kv_layers", GgufValue::u32(4)),
                 "KV-shared layer 2 is global but layer 1");
  expect_refused(with_key(dir, g4, "gemma4.attention.shared_kv_layers", GgufValue::u32(5)), "at least 2");
  expect_refused(with_key(dir, g4, "gemma4.attention.shared_kv_layers", GgufValue::u32(6)), "must be in 0..5");
  // The shared sliding layers' source (layer 1) with other KV heads than theirs.
  const std::string e = testing::synthesize(dir, e_model_options(), "e.gguf");
  std::vector<GgufValue> kv_heads;
  for (int n : {2, 1, 1, 2, 2, 1}) kv_heads.push_back(GgufValue::i32(n));
  expect_refused(with_key(dir, e, "gemma4.attention.head_count_kv", GgufValue::array(GgufValueType::INT32, kv_heads)),
                 "KV-shared layer 3 has 2 KV heads of size 32 but layer 1");
  // Experts without a count per token (llama.cpp asserts).
  expect_refused(with_key(dir, g4, "gemma4.expert_count", GgufValue::u32(128)), "expert_used_count' = 0 must be in 1..128");
  const std::string moe = testing::synthesize(dir, testing::moe_options(), "moe.gguf");
  expect_refused(with_key(dir, moe, "gemma4.expert_count", GgufValue::u32(0)), "routers (ffn_gate_inp) but no metadata");
  expect_refused(with_key(dir, moe, "gemma4.expert_used_count", GgufValue::u32(9)), "must be in 1..8");
  expect_refused(with_key(dir, moe, "gemma4.expert_used_count", GgufValue::u32(0)), "must be in 1..8");
  expect_refused(with_key(dir, moe, "gemma4.expert_count", GgufValue::u32(2000)), "out of range (0..1024)");
  expect_refused(with_key(dir, moe, "gemma4.expert_count", GgufValue::u32(4)), "blk.0.ffn_gate_inp.weight' has shape 128x8");
  expect_refused(with_key(dir, moe, "gemma4.expert_feed_forward_length", GgufValue::u32(32)),
                 "ffn_gate_up_exps.weight' has shape 128x128x8 but the model configuration needs 128x64x8");
  expect_refused(with_key(dir, moe, "gemma4.expert_feed_forward_length", GgufValue::u32(0)), "expert_feed_forward_length");
  expect_refused(with_key(dir, moe, "gemma4.expert_group_count", GgufValue::u32(2)), "grouped expert selection");
  std::vector<GgufValue> used;
  for (int n : {3, 3, 2, 3, 3, 3}) used.push_back(GgufValue::i32(n));
  expect_refused(with_key(dir, moe, "gemma4.expert_used_count", GgufValue::array(GgufValueType::INT32, used)),
                 "differs between layers");
  expect_refused(with_key(dir, g4, "general.architecture", GgufValue::string("llama")), "architecture 'llama'");
  expect_refused(with_key(dir, g4, "gemma4.attention.head_count", GgufValue::u32(3)), "not a multiple");
  expect_refused(with_key(dir, g4, "gemma4.embedding_length", GgufValue::u32(64)), "has shape");
  expect_refused(with_key(dir, g4, "gemma4.attention.sliding_window_pattern", GgufValue::u32(2)), "one bool per layer");
}

}  // namespace
}  // namespace channel
