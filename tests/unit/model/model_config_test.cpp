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
  expect_refused(with_key(dir, g4, "gemma4.embedding_length_per_layer_input", GgufValue::u32(256)), "per-layer embeddings");
  expect_refused(with_key(dir, g4, "gemma4.attention.shared_kv_layers", GgufValue::u32(4)), "shares KV");
  expect_refused(with_key(dir, g4, "gemma4.expert_count", GgufValue::u32(128)), "mixture-of-experts");
  expect_refused(with_key(dir, g4, "general.architecture", GgufValue::string("llama")), "architecture 'llama'");
  expect_refused(with_key(dir, g4, "gemma4.attention.head_count", GgufValue::u32(3)), "not a multiple");
  expect_refused(with_key(dir, g4, "gemma4.embedding_length", GgufValue::u32(64)), "has shape");
  expect_refused(with_key(dir, g4, "gemma4.attention.sliding_window_pattern", GgufValue::u32(2)), "one bool per layer");
}

}  // namespace
}  // namespace channel
