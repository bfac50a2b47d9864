// The CPU forward pass on synthesized models: batched prefill against token-by-token decode,
// determinism across thread counts, and bad input refused without touching the cache.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/stream_context.h"
#include "relative_l2.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

std::vector<int32_t> prompt_tokens(int n, int n_vocab) {
  std::vector<int32_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 13) % n_vocab);
  return tokens;
}

using channel::testing::relative_l2;

class Forward : public ::testing::TestWithParam<std::tuple<ModelArch, GgmlType>> {};

// Same kernels, different batch shapes: prefill of 20 tokens and 20 single-token decodes agree
// within `tolerance` at every position.
void expect_prefill_matches_decode(SynthOptions o, double tolerance) {
  TempDir dir;
  o.sliding_window = 8;  // shorter than the prompt, so the sliding mask matters
  const auto model = Model::load(testing::synthesize(dir, o, "m.gguf"));
  const auto tokens = prompt_tokens(20, model->config().n_vocab);

  cpu::CpuBackend batched_backend(model, 2);
  StreamContext batched(batched_backend, model->config());
  Logits all;
  batched.append(tokens, LogitsWanted::All, all);
  ASSERT_EQ(all.n_rows, 20);

  cpu::CpuBackend stepped_backend(model, 2);
  StreamContext stepped(stepped_backend, model->config());
  for (size_t i = 0; i < tokens.size(); ++i) {
    Logits one;
    stepped.append(std::span<const int32_t>(&tokens[i], 1), LogitsWanted::Last, one);
    for (float v : one.row(0)) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LT(relative_l2(one.row(0), all.row(static_cast<int64_t>(i))), tolerance) << "position " << i;
  }
}

// 1, 2 and 3 threads give the same logits, bit for bit.
void expect_thread_count_invariant(const SynthOptions& o) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, o, "m.gguf"));
  const auto tokens = prompt_tokens(9, model->config().n_vocab);
  std::vector<float> reference;
  for (int threads : {1, 2, 3}) {
    cpu::CpuBackend backend(model, threads);
    StreamContext context(backend, model->config());
    Logits logits;
    context.append(tokens, LogitsWanted::All, logits);
    if (reference.empty()) {
      reference = logits.values;
    } else {
      EXPECT_EQ(logits.values, reference) << threads << " threads";
    }
  }
}

TEST_P(Forward, PrefillMatchesTokenByTokenDecode) {
  const auto [arch, type] = GetParam();
  SynthOptions o = default_synth_options(arch);
  o.weight_type = o.embedding_type = type;
  // Agreement to float rounding. Except BF16 on CPUs with AVX512_BF16, where prefill and decode
  // add in llama.cpp's two different orders (tinyBLAS, ggml_vec_dot_bf16: accumulation.h) and
  // bf16 rounding of the activations amplifies the last-bit differences to a few 1e-3, as in
  // llama.cpp.
  const bool two_orders = type == GgmlType::BF16 && cpu::cpu_has_avx512_bf16();
  expect_prefill_matches_decode(o, two_orders ? 1e-2 : 1e-5);
}

// A Gemma 4 E-model (per-layer embeddings; layers 3-5 reading the KV that layers 1 and 2 wrote,
// in this call or in earlier ones).
TEST(ForwardEModel, PrefillMatchesTokenByTokenDecode) {
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.n_embd_per_layer = 32;
  o.n_kv_shared = 3;
  expect_prefill_matches_decode(o, 1e-5);
}

// A Gemma 4 MoE model (testing::moe_options, 3 experts per token beside the dense FFN): prefill
// groups the batch's tokens by expert, decode runs each token's experts alone. F32 and Q4_0 (the
// quantized activation path); the experts' BF16 products add in one order in both
// (accumulation.h). With 6 experts, not 8: an F32 router of a multiple of 4 experts adds in
// llama.cpp's tinyBLAS order in prefill and in its vec_dot order in decode (moe.h), as llama.cpp
// does, and routing grows those last bits to ~1e-3 (seen with 8); with 6 both take vec_dot.
TEST(ForwardMoe, PrefillMatchesTokenByTokenDecode) {
  for (GgmlType type : {GgmlType::F32, GgmlType::Q4_0}) {
    SynthOptions o = testing::moe_options(type);
    o.n_expert = 6;
    expect_prefill_matches_decode(o, 1e-5);
  }
}

// The experts' products are shared out over the threads by row ranges of all of them at once.
TEST(ForwardMoe, ThreadCountDoesNotChangeLogits) {
  expect_thread_count_invariant(testing::moe_options(GgmlType::Q8_0));
}

// The same experts stored as separate ffn_gate_exps / ffn_up_exps (the other layout llama.cpp
// reads) instead of the fused ffn_gate_up_exps give the same logits, bit for bit.
TEST(ForwardMoe, SeparateGateAndUpTensorsMatchFused) {
  TempDir dir;
  const SynthOptions o = testing::moe_options(GgmlType::Q4_0);
  const std::string fused_path = testing::synthesize(dir, o, "fused.gguf");
  const GgufFile fused = GgufFile::open(fused_path);
  GgufWriter writer;
  for (const auto& [k, v] : fused.metadata()) writer.set(k, v);
  for (const auto& t : fused.tensors()) {
    const auto bytes = fused.tensor_bytes(t);
    if (!t.name.ends_with("ffn_gate_up_exps.weight")) {
      writer.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(bytes.begin(), bytes.end()));
      continue;
    }
    // Expert e's rows: n_ff_exp gate rows, then n_ff_exp up rows.
    const size_t half = bytes.size() / static_cast<size_t>(2 * o.n_expert);
    std::vector<uint8_t> gate, up;
    for (int e = 0; e < o.n_expert; ++e) {
      const auto expert = bytes.begin() + static_cast<ptrdiff_t>(2 * half * e);
      gate.insert(gate.end(), expert, expert + static_cast<ptrdiff_t>(half));
      up.insert(up.end(), expert + static_cast<ptrdiff_t>(half), expert + static_cast<ptrdiff_t>(2 * half));
    }
    const std::string layer = t.name.substr(0, t.name.find("ffn_gate_up_exps"));
    const std::vector<int64_t> dims = {t.dims[0], t.dims[1] / 2, t.dims[2]};
    writer.add_tensor(layer + "ffn_gate_exps.weight", t.type, dims, std::move(gate));
    writer.add_tensor(layer + "ffn_up_exps.weight", t.type, dims, std::move(up));
  }
  const std::string separate_path = dir.file("separate.gguf");
  writer.write(separate_path);

  std::vector<std::vector<float>> logits;
  for (const std::string& path : {fused_path, separate_path}) {
    const auto model = Model::load(path);
    EXPECT_EQ(model->layers()[0].experts->fused_gate_up(), path == fused_path);
    cpu::CpuBackend backend(model, 2);
    StreamContext context(backend, model->config());
    Logits out;
    context.append(prompt_tokens(12, model->config().n_vocab), LogitsWanted::All, out);
    logits.push_back(out.values);
  }
  EXPECT_EQ(logits[0], logits[1]);
}

TEST_P(Forward, ThreadCountDoesNotChangeLogits) {
  const auto [arch, type] = GetParam();
  SynthOptions o = default_synth_options(arch);
  o.weight_type = o.embedding_type = type;
  expect_thread_count_invariant(o);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Forward,
                         ::testing::Combine(::testing::Values(ModelArch::Gemma3, ModelArch::Gemma4),
                                            ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16,
                                                              GgmlType::Q8_0, GgmlType::Q4_0)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == ModelArch::Gemma3 ? "gemma3_" : "gemma4_") +
                                  std::string(ggml_type_traits(std::get<1>(info.param)).name);
                         });

TEST(ForwardInput, BadTokenIsRefusedAndStateKept) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, default_synth_options(ModelArch::Gemma4), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  const auto tokens = prompt_tokens(6, n_vocab);

  cpu::CpuBackend clean_backend(model, 1);
  StreamContext clean(clean_backend, model->config());
  Logits expected;
  clean.append(std::span(tokens).first(3), LogitsWanted::None, expected);
  clean.append(std::span(tokens).subspan(3), LogitsWanted::Last, expected);

  cpu::CpuBackend backend(model, 1);
  StreamContext context(backend, model->config());
  Logits logits;
  context.append(std::span(tokens).first(3), LogitsWanted::None, logits);
  const std::vector<int32_t> bad = {5, n_vocab, 7};
  EXPECT_THROW(context.append(bad, LogitsWanted::Last, logits), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(context.append(negative, LogitsWanted::Last, logits), Error);
  EXPECT_EQ(context.clock(), 3);
  context.append(std::span(tokens).subspan(3), LogitsWanted::Last, logits);
  EXPECT_EQ(logits.values, expected.values);
}

}  // namespace
}  // namespace channel
