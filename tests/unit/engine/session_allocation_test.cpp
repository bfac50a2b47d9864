// A session's decode loop allocates nothing per token (issue 12: "nothing allocated in the decode
// loop"), with episodic memory on: sampling, the thinking gate, the token's report and the
// staging of the burst's tokens for memory reuse what the session holds; only the commit of a
// full 64-token episode (its KV copied out, its centroid, the store's record) allocates.
// decode_allocations.h replaces this test binary's operator new and counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
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

// Records the allocation count and the session's episode count as each token is reported.
struct AllocationsPerToken : SessionEvents {
  const Session& session;
  std::vector<int64_t> counts;
  std::vector<size_t> episodes;
  explicit AllocationsPerToken(const Session& s) : session(s) {
    counts.reserve(1024);
    episodes.reserve(1024);
  }
  void token(int32_t, int64_t, std::string_view, bool) override {
    counts.push_back(allocations_made.load());
    episodes.push_back(session.episodes().episodes().size());
  }
  void status(const StatusReport&) override {}
  void turn_complete(const TurnSummary&) override {}
  void tool_call(const ToolCall&) override {}
};

// A two-layer Gemma 4 model that writes `script` (SynthOptions::script) with the peer's vocabulary.
class SessionAllocations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::kCountsAllocations) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
    vocab_ = testing::peer_gemma4_vocab();
    if (!vocab_) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
    tokenizer_.emplace(Tokenizer::from_gguf(GgufFile::open(vocab_->string())));
    special_ = SpecialTokens::find(*tokenizer_, ModelArch::Gemma4);
  }

  static void append_ids(std::vector<int32_t>& script, int32_t first, int count) {
    for (int32_t id = first; id < first + count; ++id) script.push_back(id);
  }

  // A session on the CPU backend over a model that writes `script`.
  Session& start_session(const std::vector<int32_t>& script, const SessionConfig& config) {
    model_ = scripted_model(script);
    backend_.emplace(model_, 2);
    session_.emplace(model_, *backend_, config);
    return *session_;
  }

  std::shared_ptr<const Model> scripted_model(const std::vector<int32_t>& script) {
    SynthOptions o = default_synth_options(ModelArch::Gemma4);
    o.n_layer = 2;
    o.sliding_period = 2;
    o.vocab_path = vocab_->string();
    o.n_embd = static_cast<int>((script.size() + 31) / 32 * 32);  // a dimension per scripted token
    o.n_ff = o.n_embd;
    o.script = {script};
    return Model::load(testing::synthesize(dir_, o, "scripted.gguf"));
  }

  // Tokens whose step allocated: between the reports of tokens i - 1 and i the session feeds
  // token i - 1 (staging it: a full stage commits an episode) and samples token i. The first
  // steps (the session's first use of what it keeps) and the steps that commit are skipped.
  static std::vector<int> allocating_steps(const AllocationsPerToken& events) {
    std::vector<int> allocating;
    for (size_t i = 4; i < events.counts.size(); ++i) {
      const bool commits = events.episodes[i] != events.episodes[i - 1];
      if (!commits && events.counts[i] != events.counts[i - 1]) allocating.push_back(static_cast<int>(i));
    }
    return allocating;
  }

  std::optional<std::filesystem::path> vocab_;
  std::optional<Tokenizer> tokenizer_;
  SpecialTokens special_;
  testing::TempDir dir_;
  std::shared_ptr<const Model> model_;
  std::optional<cpu::CpuBackend> backend_;
  std::optional<Session> session_;
};

TEST_F(SessionAllocations, NoneBetweenDecodedTokensExceptAtEpisodeCommits) {
  // A scripted burst of 200 ordinary tokens: three full episodes and a part one.
  std::vector<int32_t> script = {special_.channel_close};
  constexpr int kDecoded = 200;
  append_ids(script, 10000, kDecoded);
  script.push_back(special_.turn_close);
  SessionConfig config;
  config.max_tokens = 400;
  Session& session = start_session(script, config);

  AllocationsPerToken events(session);
  session.input_text("Hi", 0, events);
  ASSERT_GE(events.counts.size(), static_cast<size_t>(kDecoded));
  ASSERT_EQ(session.episodes().episodes().size(), 4u);  // 3 x 64 as the stage fills, 9 as the burst ends
  const std::vector<int> allocating = allocating_steps(events);
  EXPECT_TRUE(allocating.empty()) << "tokens whose step allocated: " << ::testing::PrintToString(allocating);
}

TEST_F(SessionAllocations, NoneBetweenThoughtAndAnswerTokensExceptAtEpisodeCommits) {
  // A reasoning turn: the model opens a thought, writes 100 tokens in it, closes it and answers
  // with 100 more. Entering and leaving the thought (its header, the channel close, the spans
  // marked) happen inside the steps between reports, and the thought's lines mask self-critique
  // openers: none of it may allocate once the session has taken its first steps.
  // The raw prompt ends with <|channel>; the model goes on with "thought\n" (the header).
  std::vector<int32_t> script = {special_.channel_open, tokenizer_->find_token("thought"), special_.newline};
  constexpr int kThought = 100, kAnswer = 100;
  append_ids(script, 10000, kThought);
  script.push_back(special_.channel_close);
  append_ids(script, 20000, kAnswer);
  script.push_back(special_.turn_close);
  SessionConfig config;
  config.max_tokens = 400;
  config.thinking_budget = 400;  // no bridge: the model closes its thought itself
  Session& session = start_session(script, config);

  AllocationsPerToken events(session);
  session.input_text("<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>", kInputFlagRaw | kInputFlagReason, events);
  ASSERT_GE(events.counts.size(), static_cast<size_t>(kThought + kAnswer));  // and the header, streamed
  const std::vector<int> allocating = allocating_steps(events);
  EXPECT_TRUE(allocating.empty()) << "tokens whose step allocated: " << ::testing::PrintToString(allocating);
}

}  // namespace
}  // namespace channel
