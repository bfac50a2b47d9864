#include "backend/cpu/kernel_weights.h"

#include <gtest/gtest.h>

#include "test_models.h"

namespace channel::cpu {
namespace {

SynthOptions q4_0_model(GgmlType weight_type) {
  SynthOptions options = default_synth_options(ModelArch::Gemma3);
  options.weight_type = weight_type;
  return options;
}

TEST(KernelWeightsTest, RepacksTheFilesQ4_0MatricesOfWholeRowGroups) {
  const testing::TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, q4_0_model(GgmlType::Q4_0), "q4.gguf"));
  ThreadPool pool(2);
  const KernelWeights weights(*model, pool);
  int repacked = 0;
  for (size_t il = 0; il < model->layers().size(); ++il) {
    const LayerWeights& w = model->layers()[il];
    const LayerMatrices& m = weights.layer(static_cast<int>(il));
    for (const auto& [original, kernel] : {std::pair{&w.wq, &m.wq}, {&w.wo, &m.wo}, {&w.ffn_gate, &m.ffn_gate},
                                           {&w.ffn_up, &m.ffn_up}, {&w.ffn_down, &m.ffn_down}}) {
      const bool whole_groups = original->rows % kRowGroupRows == 0;
      EXPECT_EQ(kernel->layout, whole_groups ? WeightLayout::kQ4_0RowGroups : WeightLayout::kGguf) << "layer " << il;
      EXPECT_EQ(kernel->data != original->data, whole_groups);
      repacked += whole_groups;
    }
  }
  EXPECT_GT(repacked, 0) << "the synthesized model has no matrix of whole row groups: the test checks nothing";
}

TEST(KernelWeightsTest, LeavesMatricesTheLoadConvertedAndOtherTypes) {
  const testing::TempDir dir;
  ModelLoadOptions to_q4;
  to_q4.conversion = LoadConversion::uniform(GgmlType::Q4_0);
  const auto converted = Model::load(testing::synthesize(dir, q4_0_model(GgmlType::F32), "f32.gguf"), to_q4);
  const auto q8 = Model::load(testing::synthesize(dir, q4_0_model(GgmlType::Q8_0), "q8.gguf"));
  ThreadPool pool(2);
  for (const auto* model : {converted.get(), q8.get()}) {
    const KernelWeights weights(*model, pool);
    for (size_t il = 0; il < model->layers().size(); ++il) {
      EXPECT_EQ(weights.layer(static_cast<int>(il)).ffn_gate.data, model->layers()[il].ffn_gate.data);
      EXPECT_EQ(weights.layer(static_cast<int>(il)).ffn_gate.layout, WeightLayout::kGguf);
    }
  }
  EXPECT_EQ(converted->layers()[0].ffn_gate.type, GgmlType::Q4_0);  // converted, so the check above means something
}

}  // namespace
}  // namespace channel::cpu
