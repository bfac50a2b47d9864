// Scripted synthesized models (SynthOptions::script): the end-to-end tests rely on such a model
// continuing each scripted token with its successor, whatever came before it.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/stream_context.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

class ScriptedModel : public ::testing::TestWithParam<ModelArch> {};

TEST_P(ScriptedModel, GreedyDecodingFollowsTheScriptAfterAnyPrefix) {
  TempDir dir;
  SynthOptions o = default_synth_options(GetParam());
  o.n_layer = 2;
  o.n_embd = 64;
  o.script = {{5, 9, 3, 7, 400}, {11, 3}};  // two sequences may share a successor (3)
  const auto model = Model::load(testing::synthesize(dir, o, "scripted.gguf"));
  cpu::CpuBackend backend(model, 2);
  StreamContext context(backend, model->config());

  // An unscripted prefix first: the scripted tokens must not depend on what came before.
  const std::vector<int32_t> prefix = {100, 200, 300, 17, 42};
  Logits logits;
  context.append(prefix, LogitsWanted::Last, logits);
  const std::vector<std::pair<int32_t, int32_t>> expected = {{5, 9}, {9, 3}, {3, 7}, {7, 400}, {11, 3}};
  for (const auto& [token, next] : expected) {
    context.append(std::span<const int32_t>(&token, 1), LogitsWanted::Last, logits);
    const auto row = logits.row(0);
    EXPECT_EQ(argmax(row), next) << "after token " << token;
    // Far ahead of every other token, so penalties and sampling cannot change the choice.
    std::vector<float> sorted(row.begin(), row.end());
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    EXPECT_GT(sorted[0] - sorted[1], 15.0f) << "after token " << token;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ScriptedModel, ::testing::Values(ModelArch::Gemma3, ModelArch::Gemma4),
                         [](const auto& info) { return info.param == ModelArch::Gemma3 ? "gemma3" : "gemma4"; });

TEST(ScriptSuccessors, RefusesATokenWithTwoSuccessors) {
  EXPECT_THROW(script_successors({{1, 2, 1, 3}}, 100, 64), Error);
  EXPECT_THROW(script_successors({{1, 2}, {1, 4}}, 100, 64), Error);
  EXPECT_EQ(script_successors({{1, 2}, {1, 2, 5}}, 100, 64), (std::map<int32_t, int32_t>{{1, 2}, {2, 5}}));
}

TEST(ScriptSuccessors, RefusesIdsOutsideTheVocabularyAndMoreTokensThanAxes) {
  EXPECT_THROW(script_successors({{1, 100}}, 100, 64), Error);
  EXPECT_THROW(script_successors({{-1, 2}}, 100, 64), Error);
  EXPECT_THROW(script_successors({{1, 2, 3, 4, 5}}, 100, 3), Error);  // 4 tokens with a successor, 3 axes
  EXPECT_NO_THROW(script_successors({{1, 2, 3, 4}}, 100, 3));
}

}  // namespace
}  // namespace channel
