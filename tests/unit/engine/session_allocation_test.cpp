// A session's decode loop allocates nothing per token (issue 12: "nothing allocated in the decode
// loop"), with episodic memory on: sampling, the thinking gate, the token's report and the
// staging of the burst's tokens for memory reuse what the session holds; only the commit of a
// full 64-token episode (its KV copied out, its centroid, the store's record) allocates.
// decode_allocations.h replaces this test binary's operator new and counts.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "decode_allocations.h"
#include "engine/episode_stage.h"
#include "engine/session.h"
#include "engine/special_tokens.h"
#include "peer_vocab.h"
#include "tokenizer/tokenizer.h"

namespace channel {
namespace {

using testing::allocations_made;

// Records the allocation count (and, given the session, its episode count) as each token is
// reported.
struct AllocationsPerToken : SessionEvents {
  std::vector<int64_t> counts;
  std::vector<size_t> episodes;
  const Session* session = nullptr;
  AllocationsPerToken() {
    counts.reserve(1024);
    episodes.reserve(1024);
  }
  void token(int32_t, int64_t, std::string_view, bool) override {
    counts.push_back(allocations_made.load());
    episodes.push_back(session != nullptr ? session->episodes().episodes().size() : 0);
  }
  void status(const StatusReport&) override {}
  void turn_complete(const TurnSummary&) override {}
  void tool_call(const ToolCall&) override {}
};

TEST(SessionAllocations, NoneBetweenDecodedTokensExceptAtEpisodeCommits) {
  if (!testing::kCountsAllocations) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  const auto vocab = testing::peer_gemma4_vocab();
  if (!vocab) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
  testing::TempDir dir;
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.n_layer = 2;
  o.sliding_period = 2;
  o.vocab_path = vocab->string();
  // A scripted burst of 200 ordinary tokens: three full episodes and a part one.
  const Tokenizer tokenizer = Tokenizer::from_gguf(GgufFile::open(vocab->string()));
  const SpecialTokens special = SpecialTokens::find(tokenizer, ModelArch::Gemma4);
  std::vector<int32_t> script = {special.channel_close};
  constexpr int kDecoded = 200;
  for (int32_t id = 10000; id < 10000 + kDecoded; ++id) script.push_back(id);
  script.push_back(special.turn_close);
  o.n_embd = static_cast<int>((script.size() + 31) / 32 * 32);
  o.n_ff = o.n_embd;
  o.script = {script};
  const auto model = Model::load(testing::synthesize(dir, o, "scripted.gguf"));
  cpu::CpuBackend backend(model, 2);
  SessionConfig config;
  config.max_tokens = 400;
  Session session(model, backend, config);

  AllocationsPerToken events;
  session.input_text("Hi", 0, events);
  ASSERT_GE(events.counts.size(), static_cast<size_t>(kDecoded));
  ASSERT_EQ(session.episodes().episodes().size(), 4u);  // 3 x 64 as the stage fills, 9 as the burst ends
  // Between the reports of tokens i - 1 and i the session feeds token i - 1 (staging it: the 64th
  // staged token commits an episode) and samples token i. Skip the first steps (the session's
  // first use of what it keeps) and the steps of the three commits.
  std::vector<int> allocating;
  for (size_t i = 4; i < events.counts.size(); ++i) {
    const bool commits = i % EpisodeStage::kCapacity == 0;
    if (!commits && events.counts[i] != events.counts[i - 1]) allocating.push_back(static_cast<int>(i));
  }
  EXPECT_TRUE(allocating.empty()) << "tokens whose step allocated: " << ::testing::PrintToString(allocating);
}

TEST(SessionAllocations, NoneBetweenThoughtAndAnswerTokensExceptAtEpisodeCommits) {
  // A reasoning turn: the model opens a thought, writes 100 tokens in it, closes it and answers
  // with 100 more. Entering and leaving the thought (its header fed silently, the channel close,
  // the spans marked) happen inside the steps between reports, and the thought's lines mask
  // self-critique openers: none of it may allocate once the session has taken its first steps.
  if (!testing::kCountsAllocations) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  const auto vocab = testing::peer_gemma4_vocab();
  if (!vocab) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
  testing::TempDir dir;
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.n_layer = 2;
  o.sliding_period = 2;
  o.vocab_path = vocab->string();
  const Tokenizer tokenizer = Tokenizer::from_gguf(GgufFile::open(vocab->string()));
  const SpecialTokens special = SpecialTokens::find(tokenizer, ModelArch::Gemma4);
  // The raw prompt ends with <|channel>; the model goes on with "thought\n" (the header).
  std::vector<int32_t> script = {special.channel_open, tokenizer.find_token("thought"), special.newline};
  constexpr int kThought = 100, kAnswer = 100;
  for (int32_t id = 10000; id < 10000 + kThought; ++id) script.push_back(id);
  script.push_back(special.channel_close);
  for (int32_t id = 20000; id < 20000 + kAnswer; ++id) script.push_back(id);
  script.push_back(special.turn_close);
  o.n_embd = static_cast<int>((script.size() + 31) / 32 * 32);
  o.n_ff = o.n_embd;
  o.script = {script};
  const auto model = Model::load(testing::synthesize(dir, o, "scripted.gguf"));
  cpu::CpuBackend backend(model, 2);
  SessionConfig config;
  config.max_tokens = 400;
  config.thinking_budget = 400;  // no bridge: the model closes its thought itself
  Session session(model, backend, config);

  AllocationsPerToken events;
  events.session = &session;
  session.input_text("<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>", kInputFlagRaw | kInputFlagReason, events);
  ASSERT_GE(events.counts.size(), static_cast<size_t>(kThought + kAnswer));  // and the header, streamed
  std::vector<int> allocating;
  for (size_t i = 4; i < events.counts.size(); ++i) {
    const bool commits = events.episodes[i] != events.episodes[i - 1];
    if (!commits && events.counts[i] != events.counts[i - 1]) allocating.push_back(static_cast<int>(i));
  }
  EXPECT_TRUE(allocating.empty()) << "tokens whose step allocated: " << ::testing::PrintToString(allocating);
}

}  // namespace
}  // namespace channel
