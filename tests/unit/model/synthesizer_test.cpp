// The synthesizer's benchmark options: layer matrices shared per layer type (the values of the
// first layer of each type, norms still per layer), Gemma 3 without RoPE scaling, and the
// stream skipping that lets threads draw parts of one matrix with the values of a single draw.
#include "model/synthesizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "test_models.h"
#include "core/error.h"
#include "core/split_mix.h"
#include "model/gguf.h"

namespace channel {
namespace {

std::vector<uint8_t> bytes_of(const GgufFile& file, const std::string& tensor) {
  const auto span = file.tensor_bytes(file.require_tensor(tensor));
  return {span.begin(), span.end()};
}

std::string tensor(int layer, const char* kind) { return "blk." + std::to_string(layer) + "." + kind + ".weight"; }

TEST(SynthSharedLayerMatrices, EveryLayerStoresTheFirstOfItsTypeAndKeepsItsOwnNorms) {
  testing::TempDir dir;
  SynthOptions options = default_synth_options(ModelArch::Gemma4);  // 6 layers, global: 2 and 5
  options.weight_type = GgmlType::Q4_0;
  options.vocab_path = testing::write_small_vocab(dir);
  const GgufFile distinct = GgufFile::open(testing::synthesize(dir, options, "distinct.gguf"));
  options.share_layer_matrices = true;
  const GgufFile shared = GgufFile::open(testing::synthesize(dir, options, "shared.gguf"));

  ASSERT_EQ(shared.tensors().size(), distinct.tensors().size());
  for (const char* kind : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
    SCOPED_TRACE(kind);
    for (int first : {0, 2}) EXPECT_EQ(bytes_of(shared, tensor(first, kind)), bytes_of(distinct, tensor(first, kind)));
    for (int sliding : {1, 3, 4}) EXPECT_EQ(bytes_of(shared, tensor(sliding, kind)), bytes_of(distinct, tensor(0, kind)));
    EXPECT_EQ(bytes_of(shared, tensor(5, kind)), bytes_of(distinct, tensor(2, kind)));
    EXPECT_NE(bytes_of(shared, tensor(3, kind)), bytes_of(distinct, tensor(3, kind)));
  }
  EXPECT_EQ(bytes_of(shared, tensor(4, "attn_v")), bytes_of(distinct, tensor(0, "attn_v")));
  for (const char* kind : {"attn_norm", "ffn_norm", "post_ffw_norm", "layer_output_scale"}) {
    SCOPED_TRACE(kind);
    EXPECT_EQ(bytes_of(shared, tensor(3, kind)), bytes_of(distinct, tensor(3, kind)));
    EXPECT_NE(bytes_of(shared, tensor(3, kind)), bytes_of(shared, tensor(0, kind)));
  }
  EXPECT_EQ(bytes_of(shared, "token_embd.weight"), bytes_of(distinct, "token_embd.weight"));
}

TEST(SynthRopeScaling, FactorZeroWritesNoScalingKeys) {
  testing::TempDir dir;
  SynthOptions options = default_synth_options(ModelArch::Gemma3);
  options.vocab_path = testing::write_small_vocab(dir);
  const std::vector<uint8_t> scaled = synth_metadata(options).to_bytes();
  EXPECT_NE(GgufFile::parse(scaled).find("gemma3.rope.scaling.factor"), nullptr);
  options.rope_scaling_factor = 0.0f;
  const std::vector<uint8_t> unscaled = synth_metadata(options).to_bytes();
  EXPECT_EQ(GgufFile::parse(unscaled).find("gemma3.rope.scaling.factor"), nullptr);
  EXPECT_EQ(GgufFile::parse(unscaled).find("gemma3.rope.scaling.type"), nullptr);
}

// KV sharing as llama.cpp assigns it: the layer before the first shared one must be global when
// a shared layer is, the one before that sliding when a shared layer is.
TEST(SynthKvShared, RefusesLayoutsLlamaCppCannotReuse) {
  testing::TempDir dir;
  SynthOptions options = default_synth_options(ModelArch::Gemma4);  // 6 layers, global: 2 and 5
  options.vocab_path = testing::write_small_vocab(dir);
  const auto refusal = [&](int shared) {
    options.n_kv_shared = shared;
    try {
      synth_metadata(options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal(3), "");  // 3, 4 reuse layer 1; 5 reuses layer 2
  EXPECT_NE(refusal(2).find("layer 3 (whose KV the shared global layers reuse) must be global"), std::string::npos);
  EXPECT_NE(refusal(4).find("layer 1 (whose KV the shared global layers reuse) must be global"), std::string::npos);
  EXPECT_NE(refusal(5).find("fewer than 2 layers with KV"), std::string::npos);
  options.n_kv_shared = 0;
  options.arch = ModelArch::Gemma3;
  options.n_embd_per_layer = 32;
  EXPECT_THROW(synth_metadata(options), Error);
}

// A recall cue's answer must depend on the memory token alone: it needs a script (whose layers
// add nothing else), an axis of the memory token's own, and layers that own their matrices and KV.
TEST(SynthRecallCue, RefusesWhatWouldNotKeepTheAnswerToTheMemory) {
  testing::TempDir dir;
  SynthOptions base = default_synth_options(ModelArch::Gemma4);
  base.n_layer = 2;
  base.sliding_period = 2;
  base.n_embd = 32;
  base.n_ff = 32;
  base.vocab_path = testing::write_small_vocab(dir);
  base.script = {{5, 6}};
  base.recall_cue = SynthOptions::RecallCue{6, 7};
  const auto refusal = [&](const std::function<void(SynthOptions&)>& change) {
    SynthOptions options = base;
    change(options);
    try {
      synthesize_model(options, dir.file("cue.gguf"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal([](SynthOptions&) {}), "");
  EXPECT_NE(refusal([](SynthOptions& o) { o.script.clear(); }).find("needs a script"), std::string::npos);
  EXPECT_NE(refusal([](SynthOptions& o) { o.recall_cue->memory = 5; }).find("has a successor"), std::string::npos);
  EXPECT_NE(refusal([](SynthOptions& o) { o.recall_cue->answer = 6; }).find("must differ"), std::string::npos);
  EXPECT_NE(refusal([](SynthOptions& o) { o.recall_cue->answer = 512; }).find("outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(refusal([](SynthOptions& o) {
              o.script = {{}};
              for (int32_t t = 100; t < 132; ++t) o.script[0].push_back(t);
            }).find("embedding size of at least 33"),
            std::string::npos);
  EXPECT_NE(refusal([](SynthOptions& o) { o.share_layer_matrices = true; }).find("layers of their own"),
            std::string::npos);
}

TEST(SplitMix64, SkippingNormalsLandsWhereDrawingThemWould) {
  SplitMix64 drawn(42);
  for (int i = 0; i < 1000; ++i) drawn.normal();
  SplitMix64 skipped(42);
  skipped.skip_normals(1000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(skipped.normal(), drawn.normal());
}

}  // namespace
}  // namespace channel
