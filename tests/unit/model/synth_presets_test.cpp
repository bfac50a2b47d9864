// Synthesizer presets: each preset's metadata, read back by ModelConfig as the engine reads a
// model, has the geometry of the real Gemma model (numbers typed from the Gemma 3 and Gemma 4
// size tables, not taken from the preset table); unknown names are refused. No weights are
// drawn: a preset model is gigabytes.
#include "model/synth_presets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "test_models.h"
#include "core/error.h"
#include "model/gguf.h"
#include "model/model_config.h"

namespace channel {
namespace {

struct RealGeometry {
  const char* preset;
  ModelArch arch;
  int layers, hidden, heads, kv_heads_sliding, kv_heads_global, head_dim_sliding, head_dim_global, ffn, window;
  float global_rope_freq_scale;  // 1 / linear scaling factor of global layers
  float query_scale;
};

const RealGeometry kRealGeometries[] = {
    {"gemma3-1b", ModelArch::Gemma3, 26, 1152, 4, 1, 1, 256, 256, 6912, 512, 1.0f, 1.0f / 16},
    {"gemma3-4b", ModelArch::Gemma3, 34, 2560, 8, 4, 4, 256, 256, 10240, 1024, 1.0f / 8, 1.0f / 16},
    {"gemma3-12b", ModelArch::Gemma3, 48, 3840, 16, 8, 8, 256, 256, 15360, 1024, 1.0f / 8, 1.0f / 16},
    {"gemma3-27b", ModelArch::Gemma3, 62, 5376, 32, 16, 16, 128, 128, 21504, 1024, 1.0f / 8,
     static_cast<float>(1.0 / std::sqrt(168.0))},
    {"gemma4-12b", ModelArch::Gemma4, 48, 3840, 16, 8, 1, 256, 512, 15360, 1024, 1.0f, 1.0f},
    {"gemma4-31b", ModelArch::Gemma4, 60, 5376, 32, 16, 4, 256, 512, 21504, 1024, 1.0f, 1.0f},
};

class SynthPresetTest : public ::testing::TestWithParam<RealGeometry> {};

TEST_P(SynthPresetTest, MetadataHasTheRealGeometry) {
  const RealGeometry& real = GetParam();
  testing::TempDir dir;
  SynthOptions options = synth_preset(real.preset);
  options.vocab_path = testing::write_small_vocab(dir);
  const std::vector<uint8_t> bytes = synth_metadata(options).to_bytes();
  const ModelConfig config = ModelConfig::from_gguf(GgufFile::parse(bytes));

  EXPECT_EQ(config.arch, real.arch);
  EXPECT_EQ(config.n_layer, real.layers);
  EXPECT_EQ(config.n_embd, real.hidden);
  EXPECT_EQ(config.sliding_window, real.window);
  EXPECT_FLOAT_EQ(config.query_scale, real.query_scale);
  int n_global = 0;
  for (int il = 0; il < config.n_layer; ++il) {
    SCOPED_TRACE(il);
    const LayerConfig& layer = config.layers[il];
    const bool global = il % 6 == 5;  // five sliding layers, then one global
    n_global += global;
    EXPECT_EQ(layer.sliding, !global);
    EXPECT_EQ(layer.n_head, real.heads);
    EXPECT_EQ(layer.n_head_kv, global ? real.kv_heads_global : real.kv_heads_sliding);
    EXPECT_EQ(layer.head_dim, global ? real.head_dim_global : real.head_dim_sliding);
    EXPECT_EQ(layer.n_ff, real.ffn);
    EXPECT_FLOAT_EQ(layer.rope_freq_scale, global ? real.global_rope_freq_scale : 1.0f);
    EXPECT_EQ(layer.rope_freq_factors, global && real.arch == ModelArch::Gemma4);
  }
  EXPECT_EQ(n_global, real.layers / 6);

  EXPECT_EQ(options.weight_type, GgmlType::Q4_0);
  EXPECT_EQ(options.embedding_type, GgmlType::Q8_0);
  EXPECT_TRUE(options.share_layer_matrices);
  if (real.arch == ModelArch::Gemma4) {
    EXPECT_FLOAT_EQ(options.rotary_fraction, 0.25f);
    EXPECT_TRUE(options.global_v_equals_k);
  }
}

INSTANTIATE_TEST_SUITE_P(RealGemmaSizes, SynthPresetTest, ::testing::ValuesIn(kRealGeometries),
                         [](const auto& info) {
                           std::string name = info.param.preset;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(SynthPresets, NamesAreListedInTableOrder) {
  const std::vector<std::string_view> expected = {"gemma3-1b",  "gemma3-4b",  "gemma3-12b",
                                                  "gemma3-27b", "gemma4-12b", "gemma4-31b"};
  EXPECT_EQ(synth_preset_names(), expected);
}

TEST(SynthPresets, UnknownNameIsRefusedWithTheList) {
  try {
    synth_preset("gemma3-2b");
    FAIL() << "an unknown preset was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown synth preset 'gemma3-2b'"), std::string::npos) << message;
    EXPECT_NE(message.find("gemma3-1b, gemma3-4b"), std::string::npos) << message;
  }
  EXPECT_THROW(synth_preset(""), Error);
  EXPECT_THROW(synth_preset("Gemma3-1B"), Error);  // names are exact
}

}  // namespace
}  // namespace channel
