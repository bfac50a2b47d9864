// Quantization on load: the per-tensor type choice (target_type_on_load), and whole models
// converted on load against the same models synthesized directly in the target types (the
// synthesizer encodes with the same quantizers, from the same f32 values).
#include "model/load_conversion.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_models.h"
#include "model/fingerprint.h"
#include "model/model.h"
#include "model/quantize.h"

namespace channel {
namespace {

constexpr GgmlType F32 = GgmlType::F32, F16 = GgmlType::F16, BF16 = GgmlType::BF16, Q8 = GgmlType::Q8_0,
                   Q4 = GgmlType::Q4_0;

TEST(WeightRoleOf, NamesLlamaCppsCategories) {
  EXPECT_EQ(weight_role_of("token_embd.weight"), WeightRole::TokenEmbedding);
  EXPECT_EQ(weight_role_of("per_layer_token_embd.weight"), WeightRole::TokenEmbedding);
  EXPECT_EQ(weight_role_of("output.weight"), WeightRole::Output);
  EXPECT_EQ(weight_role_of("per_layer_model_proj.weight"), WeightRole::KeptAsStored);
  EXPECT_EQ(weight_role_of("blk.3.ffn_gate_inp.weight"), WeightRole::KeptAsStored);  // MoE router
  for (const char* name : {"blk.0.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight",
                           "blk.3.attn_output.weight", "blk.1.ffn_gate.weight", "blk.1.ffn_up.weight",
                           "blk.1.ffn_down.weight", "blk.2.inp_gate.weight", "blk.2.proj.weight",
                           "blk.4.ffn_gate_up_exps.weight", "blk.4.ffn_down_exps.weight"}) {
    EXPECT_EQ(weight_role_of(name), WeightRole::Linear) << name;
  }
}

TEST(TargetTypeOnLoad, Q4MixTakesEachRoleToItsType) {
  const LoadConversion q4 = LoadConversion::q4_mix();
  EXPECT_EQ(target_type_on_load(q4, WeightRole::Linear, F32, 128), Q4);
  EXPECT_EQ(target_type_on_load(q4, WeightRole::Output, F32, 128), Q8);
  EXPECT_EQ(target_type_on_load(q4, WeightRole::TokenEmbedding, F32, 128), BF16);
  EXPECT_EQ(target_type_on_load(q4, WeightRole::KeptAsStored, F32, 128), F32);
  for (GgmlType stored : {F16, BF16}) EXPECT_EQ(target_type_on_load(q4, WeightRole::Linear, stored, 128), Q4);
}

TEST(TargetTypeOnLoad, Q8MixTakesLinearAndOutputToQ8AndEmbeddingsToBf16) {
  const LoadConversion q8 = LoadConversion::q8_mix();
  EXPECT_EQ(target_type_on_load(q8, WeightRole::Linear, F32, 64), Q8);
  EXPECT_EQ(target_type_on_load(q8, WeightRole::Output, BF16, 64), Q8);
  EXPECT_EQ(target_type_on_load(q8, WeightRole::TokenEmbedding, F32, 64), BF16);
}

TEST(TargetTypeOnLoad, NeverRequantizesAQuantizedTensor) {
  for (const LoadConversion& conversion : {LoadConversion::q4_mix(), LoadConversion::uniform(Q4),
                                           LoadConversion::uniform(F16)}) {
    for (GgmlType stored : {Q4, Q8}) {
      for (WeightRole role : {WeightRole::Linear, WeightRole::Output, WeightRole::TokenEmbedding}) {
        EXPECT_EQ(target_type_on_load(conversion, role, stored, 128), stored);
      }
    }
  }
}

TEST(TargetTypeOnLoad, OnlyNarrows) {
  EXPECT_EQ(target_type_on_load(LoadConversion::uniform(F32), WeightRole::Linear, BF16, 64), BF16);
  EXPECT_EQ(target_type_on_load(LoadConversion::uniform(F16), WeightRole::Linear, BF16, 64), BF16);
  EXPECT_EQ(target_type_on_load(LoadConversion::uniform(BF16), WeightRole::Linear, F16, 64), F16);
  EXPECT_EQ(target_type_on_load(LoadConversion::uniform(F16), WeightRole::Linear, F32, 64), F16);
  EXPECT_EQ(target_type_on_load(LoadConversion::uniform(BF16), WeightRole::TokenEmbedding, F32, 64), BF16);
  // --q4 on a BF16 model: the embeddings already are BF16.
  EXPECT_EQ(target_type_on_load(LoadConversion::q4_mix(), WeightRole::TokenEmbedding, BF16, 64), BF16);
}

TEST(TargetTypeOnLoad, BlockTypeThatDoesNotDivideTheRowsFallsBackToF16) {
  EXPECT_EQ(target_type_on_load(LoadConversion::q4_mix(), WeightRole::Linear, F32, 48), F16);
  EXPECT_EQ(target_type_on_load(LoadConversion::q4_mix(), WeightRole::Linear, BF16, 48), BF16);
}

TEST(TargetTypeOnLoad, NoConversionKeepsEverything) {
  const LoadConversion none;
  EXPECT_FALSE(none.converts_anything());
  EXPECT_EQ(target_type_on_load(none, WeightRole::Linear, F32, 128), F32);
  EXPECT_EQ(target_type_on_load(none, WeightRole::TokenEmbedding, F32, 128), F32);
}

// --- whole models ---

ModelLoadOptions converting(const LoadConversion& conversion) {
  ModelLoadOptions options;
  options.conversion = conversion;
  return options;
}

std::vector<uint8_t> bytes_of(const WeightMatrix& w) { return {w.data, w.data + w.row_bytes * w.rows}; }

std::vector<uint8_t> bytes_of(const GgufFile& file, const std::string& tensor) {
  const auto span = file.tensor_bytes(file.require_tensor(tensor));
  return {span.begin(), span.end()};
}

// Every matrix of a layer with the name of its tensor.
std::vector<std::pair<std::string, const WeightMatrix*>> layer_matrices(const Model& model) {
  std::vector<std::pair<std::string, const WeightMatrix*>> out;
  for (size_t il = 0; il < model.layers().size(); ++il) {
    const LayerWeights& w = model.layers()[il];
    const auto add = [&](const char* kind, const WeightMatrix& m) {
      if (m.data) out.emplace_back("blk." + std::to_string(il) + "." + kind + ".weight", &m);
    };
    add("attn_q", w.wq);
    add("attn_k", w.wk);
    if (w.wv) add("attn_v", *w.wv);
    add("attn_output", w.wo);
    add("ffn_gate", w.ffn_gate);
    add("ffn_up", w.ffn_up);
    add("ffn_down", w.ffn_down);
    add("inp_gate", w.per_layer_gate);
    add("proj", w.per_layer_proj);
  }
  return out;
}

struct ConvertedAndDirect {
  std::shared_ptr<const Model> converted;  // the F32 model converted on load
  GgufFile direct;                          // the same model synthesized in the target types
};

ConvertedAndDirect convert_and_synthesize(const testing::TempDir& dir, SynthOptions options,
                                          const LoadConversion& conversion, GgmlType direct_linear,
                                          GgmlType direct_embedding) {
  options.weight_type = GgmlType::F32;
  options.embedding_type = GgmlType::F32;
  auto converted = Model::load(testing::synthesize(dir, options, "f32.gguf"), converting(conversion));
  options.weight_type = direct_linear;
  options.embedding_type = direct_embedding;
  return {std::move(converted), GgufFile::open(testing::synthesize(dir, options, "direct.gguf"))};
}

TEST(ModelLoadConversion, Q4MixOfAnF32ModelIsTheModelSynthesizedAsQ4WithBf16Embeddings) {
  for (ModelArch arch : {ModelArch::Gemma3, ModelArch::Gemma4}) {
    SCOPED_TRACE(static_cast<int>(arch));
    testing::TempDir dir;
    auto m = convert_and_synthesize(dir, default_synth_options(arch), LoadConversion::q4_mix(), Q4, BF16);
    const Model& model = *m.converted;
    const auto matrices = layer_matrices(model);
    ASSERT_FALSE(matrices.empty());
    for (const auto& [name, matrix] : matrices) {
      SCOPED_TRACE(name);
      EXPECT_EQ(matrix->type, Q4);
      EXPECT_EQ(matrix->row_bytes, ggml_row_bytes(Q4, matrix->cols));
      EXPECT_EQ(bytes_of(*matrix), bytes_of(m.direct, name));
    }
    EXPECT_EQ(model.token_embedding().type, BF16);
    EXPECT_EQ(bytes_of(model.token_embedding()), bytes_of(m.direct, "token_embd.weight"));
    // Gemma ties the output to the embeddings: it reads them in their converted type.
    ASSERT_TRUE(model.output_tied());
    EXPECT_EQ(model.output().type, BF16);
    EXPECT_EQ(model.output().data, model.token_embedding().data);
    EXPECT_EQ(model.converted_weights().size(), matrices.size() + 1);
  }
}

TEST(ModelLoadConversion, EModelKeepsPerLayerModelProjAndConvertsPerLayerEmbeddingsAsEmbeddings) {
  SynthOptions options = default_synth_options(ModelArch::Gemma4);
  options.n_embd_per_layer = 32;
  options.n_kv_shared = 3;
  testing::TempDir dir;
  auto m = convert_and_synthesize(dir, options, LoadConversion::q4_mix(), Q4, BF16);
  const Model& model = *m.converted;
  for (const auto& [name, matrix] : layer_matrices(model)) {
    SCOPED_TRACE(name);
    EXPECT_EQ(bytes_of(*matrix), bytes_of(m.direct, name));
  }
  const PerLayerInputWeights& ple = model.per_layer_inputs();
  EXPECT_EQ(ple.token_embd.type, BF16);
  EXPECT_EQ(bytes_of(ple.token_embd), bytes_of(m.direct, "per_layer_token_embd.weight"));
  // As llama.cpp's quantizer: per_layer_model_proj stays as stored.
  EXPECT_EQ(ple.model_proj.type, F32);
  EXPECT_EQ(bytes_of(ple.model_proj), bytes_of(model.gguf(), "per_layer_model_proj.weight"));
}

TEST(ModelLoadConversion, ConvertedRowsAreQuantizeRowOfTheStoredRows) {
  testing::TempDir dir;
  SynthOptions options = default_synth_options(ModelArch::Gemma4);
  options.weight_type = BF16;
  const std::string path = testing::synthesize(dir, options, "bf16.gguf");
  const auto stored = Model::load(path);
  ModelLoadOptions two_threads = converting(LoadConversion::uniform(Q8));
  two_threads.conversion_threads = 2;
  const auto converted = Model::load(path, two_threads);
  const WeightMatrix& from = stored->layers()[1].ffn_down;
  const WeightMatrix& to = converted->layers()[1].ffn_down;
  ASSERT_EQ(from.type, BF16);
  ASSERT_EQ(to.type, Q8);
  std::vector<float> row(static_cast<size_t>(from.cols));
  for (int64_t r = 0; r < from.rows; ++r) {
    dequantize(BF16, from.row(r), from.cols, row.data());
    const std::vector<uint8_t> expected = quantize_row(Q8, row);
    ASSERT_EQ(std::memcmp(to.row(r), expected.data(), expected.size()), 0) << "row " << r;
  }
  // --quant takes the embeddings (the tied output) to the type too; norms stay f32 vectors.
  EXPECT_EQ(converted->token_embedding().type, Q8);
  EXPECT_EQ(converted->output().type, Q8);
  EXPECT_EQ(converted->layers()[1].attn_norm, stored->layers()[1].attn_norm);
}

TEST(ModelLoadConversion, QuantizedModelIsLeftInItsFileAndKeepsItsFingerprint) {
  testing::TempDir dir;
  SynthOptions options = default_synth_options(ModelArch::Gemma4);
  options.weight_type = Q4;
  options.embedding_type = Q8;
  const std::string path = testing::synthesize(dir, options, "q4.gguf");
  const auto stored = Model::load(path);
  const auto loaded = Model::load(path, converting(LoadConversion::q8_mix()));
  EXPECT_TRUE(loaded->converted_weights().empty());
  const auto [data, size] = [&] {
    const auto span = loaded->gguf().tensor_bytes(loaded->gguf().require_tensor("blk.0.attn_q.weight"));
    return std::pair(span.data(), span.size());
  }();
  EXPECT_EQ(loaded->layers()[0].wq.data, data);
  EXPECT_GT(size, 0u);
  EXPECT_EQ(model_fingerprint(*loaded), model_fingerprint(*stored));
}

TEST(ModelLoadConversion, ConversionChangesTheFingerprint) {
  testing::TempDir dir;
  const std::string path = testing::synthesize(dir, default_synth_options(ModelArch::Gemma3), "f32.gguf");
  const uint64_t stored = model_fingerprint(*Model::load(path));
  const uint64_t q4 = model_fingerprint(*Model::load(path, converting(LoadConversion::q4_mix())));
  const uint64_t q8 = model_fingerprint(*Model::load(path, converting(LoadConversion::q8_mix())));
  EXPECT_NE(stored, q4);
  EXPECT_NE(stored, q8);
  EXPECT_NE(q4, q8);
  EXPECT_EQ(model_fingerprint(*Model::load(path, converting(LoadConversion::q4_mix()))), q4);
}

TEST(ModelLoadConversion, ReportsProgressPerConvertedMatrix) {
  testing::TempDir dir;
  const std::string path = testing::synthesize(dir, default_synth_options(ModelArch::Gemma3), "f32.gguf");
  std::vector<std::pair<int, int>> calls;
  ModelLoadOptions options = converting(LoadConversion::q4_mix());
  options.conversion_progress = [&](int done, int total) { calls.emplace_back(done, total); };
  const auto model = Model::load(path, options);
  const int total = static_cast<int>(model->converted_weights().size());
  ASSERT_EQ(calls.size(), static_cast<size_t>(total) + 1);
  for (int i = 0; i <= total; ++i) EXPECT_EQ(calls[i], std::pair(i, total));
}

}  // namespace
}  // namespace channel
