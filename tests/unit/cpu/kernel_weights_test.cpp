#include "backend/cpu/kernel_weights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "test_models.h"

namespace channel::cpu {
namespace {

SynthOptions gemma3_model(GgmlType weight_type) {
  SynthOptions options = default_synth_options(ModelArch::Gemma3);
  options.weight_type = weight_type;
  return options;
}

TEST(KernelWeightsTest, RepacksTheFilesQuantizedMatricesOfWholeRowGroups) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0}) {
    SCOPED_TRACE(ggml_type_traits(type).name);
    const testing::TempDir dir;
    SynthOptions options = gemma3_model(type);
    options.embedding_type = type;  // the tied output projection
    const auto model = Model::load(testing::synthesize(dir, options, "m.gguf"));
    ThreadPool pool(2);
    const KernelWeights weights(*model, pool);
    int repacked = 0;
    for (size_t il = 0; il < model->layers().size(); ++il) {
      const LayerWeights& w = model->layers()[il];
      const LayerMatrices& m = weights.layer(static_cast<int>(il));
      for (const auto& [original, kernel] : {std::pair{&w.wq, &m.wq}, {&w.wo, &m.wo}, {&w.ffn_gate, &m.ffn_gate},
                                             {&w.ffn_up, &m.ffn_up}, {&w.ffn_down, &m.ffn_down}}) {
        const bool whole_groups = original->rows % kRowGroupRows == 0;
        EXPECT_EQ(kernel->layout, whole_groups ? WeightLayout::kRowGroups : WeightLayout::kGguf) << "layer " << il;
        EXPECT_EQ(kernel->data != original->data, whole_groups);
        repacked += whole_groups;
      }
    }
    EXPECT_GT(repacked, 0) << "the synthesized model has no matrix of whole row groups: the test checks nothing";
    EXPECT_EQ(weights.output().layout, WeightLayout::kRowGroups);
    EXPECT_EQ(weights.output().type, type);
    EXPECT_NE(weights.output().data, model->output().data);
  }
}

TEST(KernelWeightsTest, LeavesMatricesTheLoadConvertedWhereTheyAre) {
  const testing::TempDir dir;
  ModelLoadOptions to_q4;
  to_q4.conversion = LoadConversion::uniform(GgmlType::Q4_0);
  const auto converted = Model::load(testing::synthesize(dir, gemma3_model(GgmlType::F32), "f32.gguf"), to_q4);
  ThreadPool pool(2);
  const KernelWeights weights(*converted, pool);
  for (size_t il = 0; il < converted->layers().size(); ++il) {
    EXPECT_EQ(weights.layer(static_cast<int>(il)).ffn_gate.data, converted->layers()[il].ffn_gate.data);
    EXPECT_EQ(weights.layer(static_cast<int>(il)).ffn_gate.layout, WeightLayout::kGguf);
  }
  EXPECT_EQ(converted->layers()[0].ffn_gate.type, GgmlType::Q4_0);  // converted, so the check above means something
}

// The bytes of `w` (GGUF layout) and of its kernel view are the same, in a different place.
void expect_copied(const WeightMatrix& w, const WeightMatrix& kernel) {
  EXPECT_EQ(kernel.layout, WeightLayout::kGguf);
  EXPECT_NE(kernel.data, w.data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kernel.data) % 64, 0u) << "not on a cache line boundary";
  const size_t bytes = w.row_bytes * static_cast<size_t>(w.rows);
  EXPECT_EQ(std::memcmp(kernel.data, w.data, bytes), 0);
}

TEST(KernelWeightsTest, CopiesTheFilesFloatMatricesAsTheyAre) {
  const testing::TempDir dir;
  const auto f16 = Model::load(testing::synthesize(dir, gemma3_model(GgmlType::F16), "f16.gguf"));
  ThreadPool pool(2);
  const KernelWeights weights(*f16, pool);
  for (size_t il = 0; il < f16->layers().size(); ++il) {
    expect_copied(f16->layers()[il].ffn_gate, weights.layer(static_cast<int>(il)).ffn_gate);
    expect_copied(f16->layers()[il].wq, weights.layer(static_cast<int>(il)).wq);
  }
}

}  // namespace
}  // namespace channel::cpu
