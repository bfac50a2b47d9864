// The session on a synthesized Gemma 4 model with the real vocabulary: event order, limits,
// abort, bad input, and probes that leave no trace.
#include "engine/session.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <new>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/episode_format.h"
#include "model/fingerprint.h"
#include "faulty_backend.h"
#include "peer_vocab.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

struct Recorder : SessionEvents {
  std::vector<int32_t> tokens;
  std::vector<bool> in_thought;  // per token
  std::vector<EngineStatus> statuses;
  std::vector<TurnSummary> turns;
  std::vector<uint16_t> archived_episodes;  // per status report
  std::vector<std::pair<std::string, std::string>> tool_calls;
  std::atomic<bool>* abort_after_first_token = nullptr;

  void token(int32_t id, int64_t, std::string_view, bool thought) override {
    tokens.push_back(id);
    in_thought.push_back(thought);
    if (abort_after_first_token) *abort_after_first_token = true;
  }
  void status(const StatusReport& report) override {
    statuses.push_back(report.status);
    archived_episodes.push_back(report.archived_episodes);
  }
  void turn_complete(const TurnSummary& summary) override { turns.push_back(summary); }
  void tool_call(const ToolCall& call) override {
    tool_calls.emplace_back(call.name, call.arguments);
  }
};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto vocab = testing::peer_gemma4_vocab();
    if (!vocab) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
    model_ = Model::load(testing::synthesize(dir_, synth_options(vocab->string()), "m.gguf"));
  }

  static SynthOptions synth_options(const std::string& vocab) {
    SynthOptions o = default_synth_options(ModelArch::Gemma4);
    o.n_layer = 2;
    o.sliding_period = 2;
    o.n_embd = 64;
    o.n_ff = 64;
    o.vocab_path = vocab;
    return o;
  }

  // A model that writes `script` (tokenized with the vocabulary) after its first token.
  void use_scripted_model(std::string_view script) {
    const Tokenizer tokenizer = Tokenizer::from_gguf(GgufFile::open(testing::peer_gemma4_vocab()->string()));
    use_scripted_tokens(tokenizer.encode(script, /*add_special=*/false, /*parse_special=*/true));
  }
  void use_scripted_tokens(std::vector<int32_t> script) {
    SynthOptions o = synth_options(testing::peer_gemma4_vocab()->string());
    // The synthesizer writes a script with one embedding dimension per token.
    o.n_embd = std::max<int>(o.n_embd, static_cast<int>((script.size() + 31) / 32 * 32));
    o.script = {std::move(script)};
    model_ = Model::load(testing::synthesize(dir_, o, "scripted.gguf"));
  }

  // The scripted model with a recall cue (SynthOptions::recall_cue): `answer` only where
  // `memory`'s KV is visible to its global layer.
  void use_recall_cue_model(std::vector<int32_t> script, int32_t memory, int32_t answer) {
    SynthOptions o = synth_options(testing::peer_gemma4_vocab()->string());
    o.script = {std::move(script)};
    o.recall_cue = SynthOptions::RecallCue{memory, answer};
    model_ = Model::load(testing::synthesize(dir_, o, "recall_cue.gguf"));
  }

  // Greedy unless told otherwise: reproducible turns.
  static SessionConfig session_config(uint32_t max_tokens, float temperature, uint64_t seed) {
    SessionConfig config;
    config.max_tokens = max_tokens;
    config.sampler.temperature = temperature;
    config.sampler.seed = seed;
    return config;
  }
  std::unique_ptr<Session> make_session(uint32_t max_tokens, float temperature = 0.0f, uint64_t seed = 0) {
    backends_.push_back(std::make_unique<cpu::CpuBackend>(model_, 2));
    return std::make_unique<Session>(model_, *backends_.back(), session_config(max_tokens, temperature, seed));
  }
  // The same, on the CPU backend behind `faulty` (made here, kept as long as the fixture).
  std::unique_ptr<Session> make_faulty_session(testing::FaultyBackend*& faulty, uint32_t max_tokens,
                                               float temperature, uint64_t seed) {
    backends_.push_back(std::make_unique<cpu::CpuBackend>(model_, 2));
    faulty_backends_.push_back(std::make_unique<testing::FaultyBackend>(*backends_.back()));
    faulty = faulty_backends_.back().get();
    return std::make_unique<Session>(model_, *faulty, session_config(max_tokens, temperature, seed));
  }

  TempDir dir_;
  std::shared_ptr<const Model> model_;
  std::vector<std::unique_ptr<cpu::CpuBackend>> backends_;
  std::vector<std::unique_ptr<testing::FaultyBackend>> faulty_backends_;
};

TEST_F(SessionTest, TurnReportsProgressTokensAndCompletion) {
  auto session = make_session(12);
  Recorder events;
  session->input_text("Hello there", 0, events);
  ASSERT_FALSE(events.statuses.empty());
  EXPECT_EQ(events.statuses.front(), EngineStatus::Encoding);
  EXPECT_EQ(events.statuses.back(), EngineStatus::Idle);
  ASSERT_EQ(events.turns.size(), 1u);
  const TurnSummary& turn = events.turns[0];
  EXPECT_LE(events.tokens.size(), 12u);
  EXPECT_TRUE(turn.reason == StopReason::MaxTokens || turn.reason == StopReason::EndOfTurn ||
              turn.reason == StopReason::ToolCall);
  if (turn.reason == StopReason::MaxTokens) {
    EXPECT_EQ(events.tokens.size(), 12u);
  }
  // The template's grammar tokens never reach the client.
  const SpecialTokens special = SpecialTokens::find(session->tokenizer(), ModelArch::Gemma4);
  for (int32_t t : events.tokens) {
    EXPECT_NE(t, special.channel_open);
    EXPECT_NE(t, special.channel_close);
    EXPECT_NE(t, special.turn_close);
  }
}

TEST_F(SessionTest, AbortStopsDecodingWithinOneToken) {
  auto session = make_session(100);
  Recorder events;
  events.abort_after_first_token = &session->abort_flag();
  session->input_text("Tell me a long story", 0, events);
  ASSERT_EQ(events.turns.size(), 1u);
  EXPECT_EQ(events.turns[0].reason, StopReason::Aborted);
  EXPECT_EQ(events.tokens.size(), 1u);
}

TEST_F(SessionTest, ThoughtLinesMayNotOpenWithSelfCritique) {
  // The model writes "Alpha\nWait here" after <channel|> (the end of a plain user turn) and after
  // "Alpha" wherever it stands; inside a thought "Wait" may not open a line.
  use_scripted_model("<channel|>Alpha\nWait here<turn|>");
  auto session = make_session(16);
  const Tokenizer& tokenizer = session->tokenizer();
  const int32_t wait = tokenizer.find_token("Wait");
  const int32_t newline = tokenizer.find_token("\n");
  ASSERT_GE(wait, 0);

  Recorder answer;
  session->input_text("Hi", 0, answer);
  EXPECT_EQ(answer.tokens, (std::vector<int32_t>{tokenizer.find_token("Alpha"), newline, wait,
                                                 tokenizer.find_token("\u2581here")}));

  auto thinking = make_session(16);
  Recorder thought;
  thinking->input_text("<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\nAlpha", kInputFlagRaw | kInputFlagReason,
                       thought);
  ASSERT_GE(thought.tokens.size(), 2u);
  EXPECT_EQ(thought.tokens[0], newline);
  EXPECT_TRUE(thought.in_thought[0]);
  const SpecialTokens special = SpecialTokens::find(tokenizer, ModelArch::Gemma4);
  for (int32_t critique : special.critique) EXPECT_NE(thought.tokens[1], critique);
}

TEST_F(SessionTest, BadTokenIdsAreRefusedAndChangeNothing) {
  auto session = make_session(4);
  Recorder events;
  const std::vector<int32_t> bad = {2, 1 << 24};
  EXPECT_THROW(session->input_tokens(bad, 0, events), Error);
  EXPECT_EQ(session->clock(), 0);
  EXPECT_TRUE(events.statuses.empty());
}

TEST_F(SessionTest, SystemPromptWithAFieldOfTheWrongTypeIsRefusedAndChangesNothing) {
  auto session = make_session(4);
  Recorder events;
  EXPECT_THROW(session->set_system(R"({"instructions":"x","tools":[{"name":3}]})", events), Error);
  EXPECT_EQ(session->clock(), 0);
  EXPECT_TRUE(events.statuses.empty());
}

// A verbatim probe prompt (it has <|turn>, so no framing is added) of exactly `n` tokens.
std::string probe_prompt_of(const Session& session, size_t n) {
  std::string prompt = "<|turn>";
  for (size_t i = 1; i < n; ++i) prompt += " a";
  EXPECT_EQ(session.tokenizer().encode(prompt, false, true).size(), n);
  return prompt;
}

std::string refusal_of_probe(Session& session, const std::string& prompt, uint16_t max_decode_tokens) {
  Recorder events;
  try {
    session.probe(prompt, {}, max_decode_tokens, events);
  } catch (const Error& error) {
    return error.what();
  }
  return "the probe was not refused";
}

TEST_F(SessionTest, ProbesLeaveNoTrace) {
  // Two sessions see the same turns; one runs probes in between (the longest one far past the
  // 128 scratch slots, in ring slots). Greedy output must match.
  auto plain = make_session(10);
  auto probed = make_session(10);
  Recorder plain_events, probed_events, probe_events;
  plain->input_text("First question", 0, plain_events);
  probed->input_text("First question", 0, probed_events);
  const ProbeResult discrete = probed->probe("Answer now?", {"0", "1"}, 1, probe_events);
  EXPECT_LT(discrete.index, 2);
  EXPECT_GT(discrete.confidence, 0.0f);
  EXPECT_GE(discrete.entropy, 0.0f);
  EXPECT_LE(discrete.entropy, std::log(2.0f) + 1e-6f);
  EXPECT_GT(discrete.cost_ms, 0.0f);
  probed->probe("Say something", {}, 8, probe_events);
  const int64_t clock = probed->clock();
  probed->probe(probe_prompt_of(*probed, 2048), {}, 16, probe_events);
  const std::string refusal = refusal_of_probe(*probed, probe_prompt_of(*probed, 2049), 1);
  EXPECT_NE(refusal.find("the probe's prompt is 2049 tokens, more than the 2048"), std::string::npos) << refusal;
  EXPECT_EQ(probed->clock(), clock);
  plain->input_text("Second question", 0, plain_events);
  probed->input_text("Second question", 0, probed_events);
  EXPECT_EQ(plain->clock(), probed->clock());
  EXPECT_EQ(plain_events.tokens, probed_events.tokens);
}

TEST_F(SessionTest, GenerativeProbesLeaveTheSamplerAsItWas) {
  // At a temperature above 0 the turns draw from the sampler's generator: a probe between two
  // turns must not move it, so the second turn is the one without the probe.
  auto plain = make_session(10, /*temperature=*/1.5f, /*seed=*/7);
  auto probed = make_session(10, /*temperature=*/1.5f, /*seed=*/7);
  Recorder plain_events, probed_events, probe_events;
  plain->input_text("First question", 0, plain_events);
  probed->input_text("First question", 0, probed_events);
  probed->probe("Say something", {}, 8, probe_events);
  probed->probe("Say something else", {}, 16, probe_events);
  plain->input_text("Second question", 0, plain_events);
  probed->input_text("Second question", 0, probed_events);
  EXPECT_EQ(plain_events.tokens, probed_events.tokens);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(SessionTest, ProbeThatFailsHalfwayLeavesTheSessionAsBefore) {
  // Two sessions see the same turn; on one, a backend failure ends probes halfway: a generative
  // probe at its fourth forward pass, a 2048-token one (past the scratch slots, in ring slots) at
  // its third chunk. Its snapshot (turn state, sampler generator, last logits, ring state, KV
  // and positions of every live slot) must then be the other's byte for byte, and the next
  // turn (at a temperature above 0, drawing from the generator) the same.
  testing::FaultyBackend* faulty = nullptr;
  auto plain = make_session(10, /*temperature=*/1.5f, /*seed=*/7);
  auto probed = make_faulty_session(faulty, 10, /*temperature=*/1.5f, /*seed=*/7);
  Recorder plain_events, probed_events, probe_events;
  plain->input_text("First question", kInputFlagReason, plain_events);
  probed->input_text("First question", kInputFlagReason, probed_events);
  const auto out_of_memory = [] { throw std::bad_alloc(); };
  faulty->fail_next_forward(out_of_memory, /*passes_first=*/3);
  EXPECT_THROW(probed->probe("Say something", {}, 16, probe_events), std::bad_alloc);
  faulty->fail_next_forward(out_of_memory, /*passes_first=*/2);
  EXPECT_THROW(probed->probe(probe_prompt_of(*probed, 2048), {}, 1, probe_events), std::bad_alloc);
  EXPECT_EQ(probed->clock(), plain->clock());
  EXPECT_EQ(probed->active_slots(), plain->active_slots());
  const std::string plain_path = dir_.file("plain.snap"), probed_path = dir_.file("probed.snap");
  plain->save_snapshot(plain_path, "s");
  probed->save_snapshot(probed_path, "s");
  EXPECT_TRUE(file_bytes(plain_path) == file_bytes(probed_path)) << "the snapshots differ";
  plain->input_text("Second question", 0, plain_events);
  probed->input_text("Second question", 0, probed_events);
  EXPECT_EQ(plain_events.tokens, probed_events.tokens);
}

double squared_norm(const std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  return sum;
}

TEST_F(SessionTest, DecodedTokensAreCommittedEvery64AndAtTheEndOfTheBurst) {
  // The scripted model decodes, after <channel|> (with which the rendered prompt ends), 65
  // distinct ordinary tokens and <turn|>: those 66 tokens, and neither the prefilled prompt nor
  // a probe's tokens, make the episodes: one of 64 when the stage fills, one of 2 when the burst
  // ends, each with the KV of its tokens on every layer.
  const SpecialTokens special = SpecialTokens::find(Tokenizer::from_gguf(model_->gguf()), ModelArch::Gemma4);
  std::vector<int32_t> decoded;
  for (int32_t id = 10000; id < 10065; ++id) decoded.push_back(id);
  decoded.push_back(special.turn_close);
  std::vector<int32_t> script = {special.channel_close};
  script.insert(script.end(), decoded.begin(), decoded.end());
  use_scripted_tokens(script);
  auto session = make_session(100);
  Recorder events;
  session->input_text("Hi", 0, events);
  const int64_t end_clock = session->clock();
  Recorder probe_events;
  session->probe("Say something", {}, 8, probe_events);
  session->commit_memory();  // nothing staged since the burst committed
  const auto& episodes = session->episodes().episodes();
  ASSERT_EQ(episodes.size(), 2u);
  // STATUS counts the stored episodes (archived_diffs): none while the prompt is read, both when
  // the turn ends and when the probe starts.
  ASSERT_FALSE(events.archived_episodes.empty());
  EXPECT_EQ(events.archived_episodes.front(), 0u);
  EXPECT_EQ(events.archived_episodes.back(), 2u);
  ASSERT_FALSE(probe_events.archived_episodes.empty());
  EXPECT_EQ(probe_events.archived_episodes.front(), 2u);
  EXPECT_EQ(episodes[0].tokens, std::vector<int32_t>(decoded.begin(), decoded.begin() + 64));
  EXPECT_EQ(episodes[1].tokens, std::vector<int32_t>(decoded.begin() + 64, decoded.end()));
  EXPECT_EQ(episodes[0].start_clock, end_clock - static_cast<int64_t>(decoded.size()));
  EXPECT_EQ(episodes[1].start_clock, episodes[0].start_clock + 64);
  for (size_t e = 0; e < episodes.size(); ++e) {
    const Episode& episode = episodes[e];
    EXPECT_EQ(episode.id, e + 1);
    for (size_t i = 0; i < episode.tokens.size(); ++i) EXPECT_EQ(episode.clocks[i], episode.start_clock + int64_t(i));
    EXPECT_EQ(episode.continuation_token, episode.tokens.back());
    EXPECT_FALSE(episode.interrupted);
    EXPECT_LE(episode.created_ms, episode.last_accessed_ms);
    EXPECT_EQ(episode.centroid.size(), static_cast<size_t>(model_->config().n_embd));
    EXPECT_NEAR(squared_norm(episode.centroid), 1.0, 1e-5);
    ASSERT_EQ(episode.kv.slots.size(), episode.tokens.size());
    ASSERT_EQ(episode.kv.layers.size(), static_cast<size_t>(model_->config().n_kv_layers));
    for (size_t i = 0; i < episode.tokens.size(); ++i) EXPECT_EQ(episode.kv.positions[i], episode.clocks[i]);
  }
}

TEST(RecallSelection, WholeEpisodesBestFirstWhileTheyFit) {
  EpisodeStore store;
  for (size_t n : {64u, 64u, 2u, 100u}) {
    Episode e;
    e.tokens.assign(n, 7);
    store.add(std::move(e));
  }
  const std::vector<size_t> ranked = {3, 0, 2, 1};  // 100 fits, 64 not, 2 does, 64 not
  EXPECT_EQ(whole_episodes_for_recall(store, ranked), (std::vector<size_t>{3, 2}));
  const std::vector<size_t> two_halves = {0, 1, 2};
  EXPECT_EQ(whole_episodes_for_recall(store, two_halves), (std::vector<size_t>{0, 1}));
}

TEST_F(SessionTest, MemQueryWritesTheBestEpisodesWholeIntoTheRecallSlots) {
  // The scripted turn of the commit test: two episodes (64 and 2 tokens), 66 tokens in all.
  const SpecialTokens special = SpecialTokens::find(Tokenizer::from_gguf(model_->gguf()), ModelArch::Gemma4);
  std::vector<int32_t> script = {special.channel_close};
  for (int32_t id = 10000; id < 10065; ++id) script.push_back(id);
  script.push_back(special.turn_close);
  use_scripted_tokens(script);
  auto session = make_session(100);
  EXPECT_TRUE(session->recall_memory("anything", 4).ids.empty());  // no episode yet
  Recorder events;
  session->input_text("Hi", 0, events);
  ASSERT_EQ(session->episodes().episodes().size(), 2u);
  EXPECT_TRUE(session->recall_memory("", 4).ids.empty());  // a query without tokens
  EXPECT_EQ(session->stream().ring().global_view().size(), static_cast<size_t>(session->clock()));

  const MemoryRecall recall = session->recall_memory("a story about the sea", 4);
  ASSERT_EQ(recall.ids.size(), 2u);
  EXPECT_EQ(recall.injected_tokens, 66u);
  // In the recall slots: the second best first, the best nearest the live ring, each episode's
  // KV as committed, at consecutive positions just before the ring.
  const Episode& best = session->episodes().episodes()[recall.ids[0] - 1];
  const Episode& second = session->episodes().episodes()[recall.ids[1] - 1];
  KvBlob recalled;
  std::vector<uint32_t> slots(66);
  for (uint32_t i = 0; i < 66; ++i) slots[i] = kv::kRecallBase + i;
  session->stream().backend().read_kv(slots, recalled);
  KvBlob expected;
  append_kv(expected, second.kv);
  append_kv(expected, best.kv);
  for (size_t l = 0; l < expected.layers.size(); ++l) EXPECT_EQ(recalled.layers[l], expected.layers[l]) << l;
  const kv::KvRing& ring = session->stream().ring();
  for (uint32_t i = 0; i < 66; ++i) {
    EXPECT_EQ(recalled.positions[i], ring.slot_position(kv::kRecallBase + i));
    EXPECT_EQ(recalled.moved_by[i], int64_t{recalled.positions[i]} - expected.positions[i]);
    if (i > 0) {
      EXPECT_EQ(recalled.positions[i], recalled.positions[i - 1] + 1);
    }
  }
  EXPECT_EQ(ring.global_view().size(), static_cast<size_t>(session->clock()) + 66);
  for (const Episode& e : session->episodes().episodes()) EXPECT_EQ(e.access_count, 1u);

  // The next turn reads them; a query that recalls one episode replaces the two.
  Recorder more;
  session->input_text("And then?", 0, more);
  const MemoryRecall one = session->recall_memory("sea", 1);
  ASSERT_EQ(one.ids.size(), 1u);
  EXPECT_EQ(one.injected_tokens, session->episodes().episodes()[one.ids[0] - 1].token_count());
}

// The recall before a prefill is OP_MEM_QUERY's with the prefilled tokens as the query and room
// for all 128 recall slots: a twin in the same state that asks MEM_QUERY with the same text (a
// RAW input past clock 0 is prefilled as tokenized, without BOS) gets the same recall slots.
TEST_F(SessionTest, EachPrefillOfHostInputRecallsWithTheInputAsTheQuery) {
  const SpecialTokens special = SpecialTokens::find(Tokenizer::from_gguf(model_->gguf()), ModelArch::Gemma4);
  std::vector<int32_t> script = {special.channel_close};
  for (int32_t id = 10000; id < 10065; ++id) script.push_back(id);
  script.push_back(special.turn_close);
  use_scripted_tokens(script);
  auto session = make_session(100), twin = make_session(100);
  for (Session* s : {session.get(), twin.get()}) {
    Recorder events;
    s->input_text("Hi", 0, events);
    EXPECT_EQ(s->stream().ring().state().recall_count, 0u) << "nothing to recall before the first turn";
    ASSERT_EQ(s->episodes().episodes().size(), 2u);  // 64 and 2 tokens, as in the commit test
  }
  const std::string input = "<|turn>user\nAnd then?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>";
  Recorder events;
  session->input_text(input, kInputFlagRaw, events);
  EXPECT_EQ(twin->recall_memory(input, kv::kRecallSlots).injected_tokens, 66u);

  ASSERT_EQ(session->stream().ring().state().recall_count, 66u);
  std::vector<uint32_t> slots(66);
  for (uint32_t i = 0; i < 66; ++i) slots[i] = kv::kRecallBase + i;
  KvBlob recalled, asked;
  session->stream().backend().read_kv(slots, recalled);
  twin->stream().backend().read_kv(slots, asked);
  EXPECT_EQ(recalled.layers, asked.layers);
  EXPECT_EQ(recalled.positions, asked.positions);
  const auto& episodes = session->episodes().episodes();
  ASSERT_EQ(episodes.size(), 4u);  // the two of each turn
  EXPECT_EQ(episodes[0].access_count, 1u);
  EXPECT_EQ(episodes[1].access_count, 1u);

  // A system prompt and a tool result are host input too; a probe is not.
  const auto accesses = [&] {
    uint32_t sum = 0;
    for (const Episode& e : session->episodes().episodes()) sum += e.access_count;
    return sum;
  };
  uint32_t before = accesses();
  session->probe("Say something", {}, 8, events);
  EXPECT_EQ(accesses(), before);
  session->set_system("You are terse.", events);
  EXPECT_GT(accesses(), before);
  before = accesses();
  session->tool_return("lookup", "{}", events);
  EXPECT_GT(accesses(), before);
}

// Issue 10's tests (2) and (3): on a model built so that only a recalled episode can give the
// answer (use_recall_cue_model), a session with memory in a file writes `memory` after the
// prompt (its script) and then `answer` (memory is in the stream now); that episode is stored.
// An engine restarted on the store recalls it before its first prefill, and the same prompt
// gets `answer` at once; without the store it gets `memory`, as the first session did.
TEST_F(SessionTest, OnlyARecalledEpisodeGivesTheAnswerAlsoAfterARestart) {
  const SpecialTokens special = SpecialTokens::find(Tokenizer::from_gguf(model_->gguf()), ModelArch::Gemma4);
  const int32_t memory = 10000, answer = 10001;
  use_recall_cue_model({special.channel_close, memory}, memory, answer);
  const std::string path = dir_.file("recall.mem");
  const EpisodicMemoryOptions stored{.enabled = true, .capacity = 8, .path = path};
  {
    auto first = make_session(4);
    first->configure_memory(stored);
    Recorder events;
    first->input_text("Hi", 0, events);
    EXPECT_EQ(events.tokens, (std::vector<int32_t>{memory, answer, answer, answer}));
    ASSERT_EQ(first->episodes().episodes().size(), 1u);
  }
  auto restarted = make_session(4);
  restarted->configure_memory(stored);
  ASSERT_EQ(restarted->episodes().episodes().size(), 1u);
  Recorder recalled;
  restarted->input_text("Hi", 0, recalled);
  EXPECT_EQ(restarted->stream().ring().state().recall_count, 4u);
  ASSERT_FALSE(recalled.tokens.empty());
  EXPECT_EQ(recalled.tokens.front(), answer);

  auto forgetful = make_session(4);
  Recorder plain;
  forgetful->input_text("Hi", 0, plain);
  ASSERT_FALSE(plain.tokens.empty());
  EXPECT_EQ(plain.tokens.front(), memory);
}

TEST_F(SessionTest, AnAbortedBurstCommitsAnInterruptedEpisodeAndMemCommitTheRest) {
  auto session = make_session(100);
  Recorder events;
  events.abort_after_first_token = &session->abort_flag();
  session->input_text("Tell me a long story", 0, events);
  ASSERT_EQ(session->episodes().episodes().size(), 1u);
  EXPECT_TRUE(session->episodes().episodes().front().interrupted);
  session->commit_memory();
  EXPECT_EQ(session->episodes().episodes().size(), 1u);
}

TEST_F(SessionTest, CommittedEpisodesAreStoredAndTheNextSessionLoadsThem) {
  const std::string path = dir_.file("memory.mem");
  const EpisodeFileHeader header = episode_file_header(model_fingerprint(*model_), model_->config());
  std::vector<std::vector<uint8_t>> committed;
  {
    auto session = make_session(100);
    EXPECT_TRUE(session->configure_memory({.enabled = true, .capacity = 8, .path = path}).empty());
    // Each episode as it was committed: the second turn's prefill recalls the first turn's,
    // which changes its access count in memory only (the file gets it at its next compaction).
    for (const std::string_view text : {"Tell me a long story", "And another one"}) {
      Recorder events;
      session->input_text(text, 0, events);
      const auto& episodes = session->episodes().episodes();
      for (size_t i = committed.size(); i < episodes.size(); ++i) {
        committed.push_back(encode_episode_record(episodes[i], header));
      }
    }
    ASSERT_GE(committed.size(), 2u);
  }
  auto next = make_session(100);
  EXPECT_TRUE(next->configure_memory({.enabled = true, .capacity = 8, .path = path}).empty());
  const auto& loaded = next->episodes().episodes();
  ASSERT_EQ(loaded.size(), committed.size());
  for (size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(encode_episode_record(loaded[i], header), committed[i]);
  Recorder events;
  next->input_text("Once more", 0, events);
  ASSERT_GT(next->episodes().episodes().size(), committed.size());  // the capacity holds them all
  EXPECT_EQ(next->episodes().episodes()[committed.size()].id, committed.size() + 1);
}

TEST_F(SessionTest, WithMemoryDisabledNothingIsCommitted) {
  auto session = make_session(100);
  session->configure_memory({.enabled = false, .capacity = 8, .path = ""});
  Recorder events;
  session->input_text("Tell me a long story", 0, events);
  session->commit_memory();
  EXPECT_TRUE(session->episodes().episodes().empty());
  EXPECT_FALSE(events.tokens.empty());
}

TEST_F(SessionTest, SettingsReachTheNextProbeAtOnce) {
  // Two sessions that differ only in their seed, set to greedy decoding (as OP_SET_CONFIG does)
  // with no turn in between: their probes are greedy, so they write the same text.
  auto first = make_session(10, /*temperature=*/1.5f, /*seed=*/1);
  auto second = make_session(10, /*temperature=*/1.5f, /*seed=*/2);
  first->config().sampler.temperature = 0.0f;
  second->config().sampler.temperature = 0.0f;
  Recorder events;
  const ProbeResult a = first->probe("Name a colour", {}, 16, events);
  const ProbeResult b = second->probe("Name a colour", {}, 16, events);
  ASSERT_FALSE(a.text.empty());
  EXPECT_EQ(a.text, b.text);
}

TEST_F(SessionTest, GenerativeProbeTextStopsBeforeAPieceThatWouldPass128Bytes) {
  // Four runs of 31..28 tabs between letters (one token each), then a word: the word's piece is
  // the first that does not fit the original's 128-byte buffer, so the text ends before it.
  const std::string tabs = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
  const std::string script = "A" + tabs + "\t\t\tB" + tabs + "\t\tC" + tabs + "\tD" + tabs + " internationalization";
  use_scripted_model("<channel|>" + script + "<turn|>");
  auto session = make_session(16);
  const Tokenizer& tokenizer = session->tokenizer();
  std::string pieces, expected, overflowing;
  for (int32_t token : tokenizer.encode(script, /*add_special=*/false, /*parse_special=*/true)) {
    const std::string& piece = tokenizer.token_text(token);
    if (pieces.size() + piece.size() > 128 && overflowing.empty()) {
      expected = pieces;
      overflowing = piece;
    }
    pieces += piece;
  }
  // A piece the final trim would not remove, so a text that kept it would differ.
  ASSERT_FALSE(trim(overflowing, " \t\r\n\"'").empty()) << "the script must overflow the buffer with a word";
  Recorder events;
  const ProbeResult result = session->probe("Continue", {}, 16, events);
  EXPECT_EQ(result.text, std::string(trim(expected, " \t\r\n\"'")));
  EXPECT_LE(result.text.size(), 128u);
}

TEST_F(SessionTest, ProbeLongerThanTheTransientSlotsIsRefusedWithItsCount) {
  // A system prompt of 3900 anchors leaves a 68-slot ring: with the 128 scratch slots, 196
  // transient tokens fit.
  auto session = make_session(4);
  Recorder events;
  std::string system;
  for (int i = 0; i < 3900; ++i) system += " a";
  session->set_system(system, events);
  const int64_t anchors = session->clock();
  ASSERT_GT(anchors, 3890);
  const size_t capacity = kv::kScratchSlots + kv::ring_size(static_cast<uint32_t>(anchors));
  const size_t prompt_tokens = capacity - 6;  // 8 decoded, the last one never fed: one too many
  const std::string refusal = refusal_of_probe(*session, probe_prompt_of(*session, prompt_tokens), 8);
  EXPECT_NE(refusal.find(fmt::format("the probe needs {} transient slots ({} prompt tokens and 7 generated), more "
                                     "than the {} there are",
                                     capacity + 1, prompt_tokens, capacity)),
            std::string::npos)
      << refusal;
  EXPECT_EQ(session->clock(), anchors);
  // One token fewer fits.
  session->probe(probe_prompt_of(*session, prompt_tokens - 1), {}, 8, events);
  EXPECT_EQ(session->clock(), anchors);
}

}  // namespace
}  // namespace channel
