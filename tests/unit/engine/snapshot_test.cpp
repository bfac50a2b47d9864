// Session snapshots on a synthesized Gemma 4 model with the real vocabulary: a loaded snapshot
// continues exactly as the session it was taken from (also after the ring wrapped and the
// anchors moved), the zero-delta gate, and every kind of bad file refused with the session
// left exactly as it was.
#include "engine/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/session.h"
#include "model/fingerprint.h"
#include "peer_vocab.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

struct TokenRecorder : SessionEvents {
  std::vector<int32_t> tokens;
  void token(int32_t id, int64_t, std::string_view, bool) override { tokens.push_back(id); }
  void status(const StatusReport&) override {}
  void turn_complete(const TurnSummary&) override {}
  void tool_call(const ToolCall&) override {}
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Offsets of the three sections' payloads in a snapshot file (after each 24-byte section header).
std::vector<std::pair<size_t, size_t>> section_payloads(std::span<const uint8_t> file) {
  const auto u64_at = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{file[at + i]} << (8 * i);
    return v;
  };
  const uint32_t n_layer = file[28] | file[29] << 8 | file[30] << 16 | uint32_t{file[31]} << 24;
  const size_t id_length_at = 32 + 4 * size_t{n_layer} + 8;
  size_t at = id_length_at + 2 + (file[id_length_at] | file[id_length_at + 1] << 8) + 8;
  std::vector<std::pair<size_t, size_t>> payloads;
  for (int s = 0; s < 3; ++s) {
    const size_t length = u64_at(at + 8);
    payloads.emplace_back(at + 24, length);
    at += 24 + length;
  }
  return payloads;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto vocab = testing::peer_gemma4_vocab();
    if (!vocab) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
    options_ = default_synth_options(ModelArch::Gemma4);
    options_.n_layer = 2;
    options_.sliding_period = 2;
    options_.n_embd = 64;
    options_.n_ff = 64;
    options_.vocab_path = vocab->string();
    configure(options_);
    model_ = Model::load(testing::synthesize(dir_, options_, "m.gguf"));
  }

  virtual void configure(SynthOptions&) {}

  // Memory is off unless asked for: a snapshot holds the stream (the recall slots included),
  // not the episode store, and every prefill recalls from the store as it is then (grown since
  // the save, or empty in a fresh session), so with memory on the continuations of an exact
  // round trip would differ. TheRecallSlotsSurviveTheRoundTrip runs with memory on.
  std::unique_ptr<Session> make_session(const std::shared_ptr<const Model>& model, float temperature = 0.0f,
                                        bool memory = false) {
    backends_.push_back(std::make_unique<cpu::CpuBackend>(model, 2));
    SessionConfig config;
    config.max_tokens = 12;
    config.sampler.temperature = temperature;  // 0: greedy
    config.sampler.seed = 7;
    auto session = std::make_unique<Session>(model, *backends_.back(), config);
    EpisodicMemoryOptions options;
    options.enabled = memory;
    session->configure_memory(options);
    return session;
  }
  std::unique_ptr<Session> make_session(float temperature = 0.0f) { return make_session(model_, temperature); }

  static std::vector<int32_t> turn(Session& session, std::string_view text) {
    TokenRecorder events;
    session.input_text(text, 0, events);
    return events.tokens;
  }

  // The next turns' tokens must be the same after a load as after the save.
  void expect_round_trip(Session& session, const std::string& path) {
    const SnapshotReport saved = session.save_snapshot(path, "entry-42");
    ASSERT_EQ(saved.outcome, SnapshotOutcome::Saved);
    EXPECT_EQ(saved.clock, session.clock());
    const auto first = turn(session, "What comes next?");
    const auto second = turn(session, "And then?");
    const int64_t clock_after = session.clock();
    ASSERT_FALSE(first.empty());

    const SnapshotReport loaded = session.load_snapshot(path);
    EXPECT_EQ(loaded.outcome, SnapshotOutcome::Loaded);
    EXPECT_EQ(loaded.clock, saved.clock);
    EXPECT_EQ(loaded.active_slots, saved.active_slots);
    EXPECT_EQ(loaded.stream_id, "entry-42");
    EXPECT_EQ(session.clock(), saved.clock);
    EXPECT_EQ(turn(session, "What comes next?"), first);
    EXPECT_EQ(turn(session, "And then?"), second);
    EXPECT_EQ(session.clock(), clock_after);

    // A new session (an engine restarted) continues the same way.
    auto fresh = make_session(session.config().sampler.temperature);
    fresh->load_snapshot(path);
    EXPECT_EQ(turn(*fresh, "What comes next?"), first);
    EXPECT_EQ(turn(*fresh, "And then?"), second);
    EXPECT_EQ(fresh->clock(), clock_after);
  }

  TempDir dir_;
  SynthOptions options_;
  std::shared_ptr<const Model> model_;
  std::vector<std::unique_ptr<cpu::CpuBackend>> backends_;
};

TEST_F(SnapshotTest, RoundTripContinuesWithTheSameGreedyTokens) {
  auto session = make_session();
  turn(*session, "Hello there");
  turn(*session, "Tell me about rivers");
  expect_round_trip(*session, dir_.file("s.snap"));
}

TEST_F(SnapshotTest, RoundTripKeepsTheSamplersGenerator) {
  auto session = make_session(/*temperature=*/0.9f);
  turn(*session, "Hello there");
  expect_round_trip(*session, dir_.file("s.snap"));
}

TEST_F(SnapshotTest, RoundTripAtClockZero) {
  auto session = make_session();
  expect_round_trip(*session, dir_.file("s.snap"));
}

TEST_F(SnapshotTest, RoundTripAfterTheRingWrappedAndTheAnchorsMoved) {
  auto session = make_session();
  // A system prompt of about 3800 tokens becomes the anchors and leaves a ring of about 170
  // slots, so a few turns wrap it and push the clock past the point where anchors move.
  std::string system = "<|turn>system\n";
  for (int i = 0; i < 1250; ++i) system += "alpha beta gamma ";
  system += "<turn|>\n";
  TokenRecorder events;
  session->set_system(system, events);
  for (int i = 0; session->clock() < 4300; ++i) turn(*session, "Next question number " + std::to_string(i));

  const std::string path = dir_.file("wrapped.snap");
  expect_round_trip(*session, path);
  const Snapshot snapshot = read_snapshot_file(path);
  EXPECT_GT(snapshot.ring.anchors, 3000u);
  EXPECT_GT(snapshot.ring.oldest_live, snapshot.ring.anchors + kv::ring_size(snapshot.ring.anchors)) << "wrapped";
  EXPECT_GT(snapshot.ring.anchor_position, 0) << "the anchors have moved";
  EXPECT_TRUE(std::any_of(snapshot.kv.moved_by.begin(), snapshot.kv.moved_by.end(), [](int64_t m) { return m > 0; }));
}

// A snapshot holds the recall slots (the ring's recall block and its KV), not the episode store:
// a fresh session, whose store is empty, loads them as they were saved. Compared through a
// discrete probe, which recalls nothing itself and reads the recall slots in its global layer:
// its candidates' logits decide its confidence and entropy, bit for bit.
TEST_F(SnapshotTest, TheRecallSlotsSurviveTheRoundTrip) {
  auto source = make_session(model_, 0.0f, /*memory=*/true);
  turn(*source, "Hello there");
  turn(*source, "Tell me about rivers");  // its prefill recalls the first turn's episode
  const kv::RingState saved_ring = source->stream().ring().state();
  ASSERT_GT(saved_ring.recall_count, 0u);
  std::vector<uint32_t> recall_slots(saved_ring.recall_count);
  for (uint32_t i = 0; i < saved_ring.recall_count; ++i) recall_slots[i] = kv::kRecallBase + i;
  KvBlob saved_recall;
  source->stream().backend().read_kv(recall_slots, saved_recall);
  const std::string path = dir_.file("recall.snap");
  ASSERT_EQ(source->save_snapshot(path, "").outcome, SnapshotOutcome::Saved);

  TokenRecorder quiet;
  const std::vector<std::string> candidates = {"0", "1", "yes", "no", "the", "a", "river", "sea"};
  const auto probe = [&](Session& s) { return s.probe("Which word comes next?", candidates, 1, quiet); };
  const ProbeResult saved = probe(*source);

  // The probe does read the recall: all the episodes (more tokens than before) change its result.
  ASSERT_GT(source->recall_memory("rivers", 8).injected_tokens, saved_ring.recall_count);
  const ProbeResult other_recall = probe(*source);
  EXPECT_TRUE(other_recall.confidence != saved.confidence || other_recall.entropy != saved.entropy);

  auto fresh = make_session(model_, 0.0f, /*memory=*/true);
  fresh->load_snapshot(path);
  EXPECT_TRUE(fresh->episodes().episodes().empty());
  EXPECT_EQ(fresh->stream().ring().state().recall_count, saved_ring.recall_count);
  EXPECT_EQ(fresh->stream().ring().slot_position(kv::kRecallBase), saved_ring.recall_position);
  KvBlob loaded_recall;
  fresh->stream().backend().read_kv(recall_slots, loaded_recall);
  EXPECT_EQ(loaded_recall.layers, saved_recall.layers);
  EXPECT_EQ(loaded_recall.positions, saved_recall.positions);
  const ProbeResult loaded = probe(*fresh);
  EXPECT_EQ(loaded.index, saved.index);
  EXPECT_EQ(loaded.confidence, saved.confidence);
  EXPECT_EQ(loaded.entropy, saved.entropy);
}

TEST_F(SnapshotTest, TheTokenHeldAtAYieldSurvivesTheRoundTrip) {
  // Random weights rarely reach a yield, so the held token is put into a saved snapshot.
  auto session = make_session();
  turn(*session, "Hello there");
  const std::string path = dir_.file("s.snap"), held_path = dir_.file("held.snap");
  session->save_snapshot(path, "");
  Snapshot held = read_snapshot_file(path);
  held.turn.turn_open = true;
  held.turn.pending_yield = session->tokenizer().find_token("Hello");
  write_bytes(held_path, encode_snapshot(held));

  TokenRecorder resumed, resumed_elsewhere, nothing_held;
  session->load_snapshot(held_path);
  session->resume(false, resumed);
  EXPECT_GT(session->clock(), held.ring.clock) << "the held token was fed";
  auto fresh = make_session();
  fresh->load_snapshot(held_path);
  fresh->resume(false, resumed_elsewhere);
  EXPECT_EQ(resumed_elsewhere.tokens, resumed.tokens);
  EXPECT_EQ(fresh->clock(), session->clock());

  session->load_snapshot(path);
  session->resume(false, nothing_held);
  EXPECT_TRUE(nothing_held.tokens.empty());
  EXPECT_EQ(session->clock(), held.ring.clock);
}

TEST_F(SnapshotTest, ZeroDeltaSavesNothing) {
  auto session = make_session();
  turn(*session, "Hello there");
  const std::string path = dir_.file("z.snap");
  EXPECT_EQ(session->save_snapshot(path, "a").outcome, SnapshotOutcome::Saved);
  std::filesystem::remove(path);
  const SnapshotReport again = session->save_snapshot(path, "b");
  EXPECT_EQ(again.outcome, SnapshotOutcome::Exists);
  EXPECT_EQ(again.clock, session->clock());
  EXPECT_EQ(again.stream_id, "b");
  EXPECT_FALSE(std::filesystem::exists(path)) << "nothing written";

  turn(*session, "More");
  EXPECT_EQ(session->save_snapshot(path, "c").outcome, SnapshotOutcome::Saved);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  turn(*session, "Even more");
  session->load_snapshot(path);  // a load counts as the last snapshot too
  EXPECT_EQ(session->save_snapshot(dir_.file("other.snap"), "d").outcome, SnapshotOutcome::Exists);
}

TEST_F(SnapshotTest, SaveToAnUnwritablePathIsAnErrorAndNothingIsRecorded) {
  auto session = make_session();
  turn(*session, "Hello there");
  EXPECT_THROW(session->save_snapshot(dir_.file("missing/dir/s.snap"), ""), Error);
  EXPECT_EQ(session->save_snapshot(dir_.file("s.snap"), "").outcome, SnapshotOutcome::Saved);
}

// Every bad file is refused with a one-line reason, and the session is exactly as before: its
// next turn and its own snapshot are those of a twin that never saw the bad files.
TEST_F(SnapshotTest, BadSnapshotsAreRefusedAndTheSessionIsUnchanged) {
  auto source = make_session();
  turn(*source, "Hello there");
  turn(*source, "Tell me about rivers");
  const std::string good_path = dir_.file("good.snap");
  source->save_snapshot(good_path, "id");
  const std::vector<uint8_t> good = read_bytes(good_path);
  const Snapshot parsed = parse_snapshot(good);

  auto victim = make_session();
  auto twin = make_session();
  for (Session* s : {victim.get(), twin.get()}) turn(*s, "A different conversation");

  std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;  // expected reason, file
  const auto payloads = section_payloads(good);
  std::vector<size_t> cuts = {0, 1, 7, 8, 11, 12, 20, 35, 36, 40, payloads[0].first - 1, payloads[0].first,
                              payloads[1].first, payloads[2].first, payloads[2].first + 5, good.size() / 2,
                              good.size() - 1};
  for (size_t at = 0; at < good.size(); at += good.size() / 97 + 1) cuts.push_back(at);
  for (size_t cut : cuts) cases.emplace_back("", std::vector<uint8_t>(good.begin(), good.begin() + cut));
  for (const auto& [offset, length] : payloads) {
    for (size_t at : {offset, offset + length / 2, offset + length - 1}) {
      auto flipped = good;
      flipped[at] ^= 0x10;
      cases.emplace_back("checksum", flipped);
    }
  }
  for (size_t at : {size_t{16}, size_t{24}, size_t{36}, size_t{40}, payloads[0].first - 30}) {
    auto flipped = good;
    flipped[at] ^= 0x01;
    cases.emplace_back("header checksum", flipped);
  }
  auto bad_magic = good;
  bad_magic[0] = 'X';
  cases.emplace_back("not a Channel snapshot", bad_magic);
  auto bad_version = good;
  bad_version[8] = 9;
  cases.emplace_back("version", bad_version);
  auto trailing = good;
  trailing.push_back(0);
  cases.emplace_back("after the last section", trailing);

  // Files that decode but do not fit: each is re-encoded with valid checksums.
  const std::vector<std::pair<std::string, std::function<void(Snapshot&)>>> misfits = {
      {"another model", [](Snapshot& s) { s.model_fingerprint ^= 1; }},
      {"geometry", [](Snapshot& s) { s.geometry.total_slots = 8192; }},
      {"geometry", [](Snapshot& s) { s.geometry.scratch_slots = 64; }},
      {"ring state", [](Snapshot& s) { s.ring.spans.front().first_slot += 1; }},
      {"ring state", [](Snapshot& s) { s.ring.anchors += 1; }},
      {"live slots", [](Snapshot& s) { s.kv.slots.back() = kv::kRecallBase - 1; }},
      {"position", [](Snapshot& s) { s.kv.positions.back() += 1; }},
      {"logits", [](Snapshot& s) { s.logits.values.pop_back(), s.logits.n_cols -= 1; }},
      {"held token", [](Snapshot& s) { s.turn.pending_yield = 1 << 30; }},
  };
  for (const auto& [reason, mutate] : misfits) {
    Snapshot bad = parsed;
    mutate(bad);
    cases.emplace_back(reason, encode_snapshot(bad));
  }
  // A snapshot of another model with the same geometry: only the fingerprint tells them apart.
  SynthOptions other_options = options_;
  other_options.seed = 99;
  auto other_model = Model::load(testing::synthesize(dir_, other_options, "other.gguf"));
  auto other = make_session(other_model);
  turn(*other, "Hello there");
  other->save_snapshot(dir_.file("other.snap"), "");
  cases.emplace_back("another model", read_bytes(dir_.file("other.snap")));

  const std::string bad_path = dir_.file("bad.snap");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [reason, bytes] = cases[i];
    write_bytes(bad_path, bytes);
    try {
      victim->load_snapshot(bad_path);
      ADD_FAILURE() << "case " << i << " (" << reason << ") loaded";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_NE(message.find("cannot load snapshot"), std::string::npos) << message;
      EXPECT_NE(message.find(reason), std::string::npos) << "case " << i << ": " << message;
    }
  }
  EXPECT_THROW(victim->load_snapshot(dir_.file("does-not-exist.snap")), Error);

  EXPECT_EQ(victim->clock(), twin->clock());
  const std::string victim_path = dir_.file("victim.snap"), twin_path = dir_.file("twin.snap");
  ASSERT_EQ(victim->save_snapshot(victim_path, "").outcome, SnapshotOutcome::Saved) << "no load counted";
  twin->save_snapshot(twin_path, "");
  EXPECT_TRUE(read_bytes(victim_path) == read_bytes(twin_path)) << "the whole state is the twin's";
  EXPECT_EQ(turn(*victim, "Go on"), turn(*twin, "Go on"));
}

// A Gemma 4 E-model: layers 0, 2 sliding, 1, 3 global, per-layer embeddings, and layers 2 and
// 3 reusing the KV of layers 0 and 1. The snapshot holds the KV of the two layers that own it.
class EModelSnapshotTest : public SnapshotTest {
 protected:
  void configure(SynthOptions& o) override {
    o.n_layer = 4;
    o.n_embd_per_layer = 32;
    o.n_kv_shared = 2;
  }
};

TEST_F(EModelSnapshotTest, RoundTripHoldsOnlyTheLayersWithKv) {
  ASSERT_EQ(model_->config().n_kv_layers, 2);
  auto session = make_session();
  turn(*session, "Hello there");
  const std::string path = dir_.file("s.snap");
  expect_round_trip(*session, path);
  const Snapshot snapshot = read_snapshot_file(path);
  EXPECT_EQ(snapshot.kv.layers.size(), 2u);
  EXPECT_EQ(snapshot.geometry.kv_widths, (std::vector<uint32_t>{2 * 32, 1 * 64}));
}

// A Gemma 4 mixture of experts (3 of 8 experts per token in every layer): the KV is a dense
// model's, and a session continues after a load as it would have without the save.
class MoeSnapshotTest : public SnapshotTest {
 protected:
  void configure(SynthOptions& o) override {
    o.n_layer = 4;
    o.n_expert = 8;
    o.n_expert_used = 3;
    o.n_ff_exp = 64;
  }
};

TEST_F(MoeSnapshotTest, RoundTripAndTheExpertsPerTokenInTheFingerprint) {
  ASSERT_TRUE(model_->config().has_experts());
  auto session = make_session();
  turn(*session, "Hello there");
  expect_round_trip(*session, dir_.file("s.snap"));
  // The same tensors routed to 2 experts per token compute another model: a snapshot of one must
  // not load into the other.
  SynthOptions two_per_token = options_;
  two_per_token.n_expert_used = 2;
  EXPECT_NE(model_fingerprint(*model_),
            model_fingerprint(*Model::load(testing::synthesize(dir_, two_per_token, "two.gguf"))));
}

TEST_F(SnapshotTest, FingerprintTellsModelsApart) {
  SynthOptions other_seed = options_;
  other_seed.seed = 5;
  SynthOptions quantized = options_;
  quantized.weight_type = GgmlType::Q8_0;
  const uint64_t base = model_fingerprint(*model_);
  EXPECT_EQ(base, model_fingerprint(*Model::load(testing::synthesize(dir_, options_, "same.gguf"))));
  EXPECT_NE(base, model_fingerprint(*Model::load(testing::synthesize(dir_, other_seed, "seed.gguf"))));
  EXPECT_NE(base, model_fingerprint(*Model::load(testing::synthesize(dir_, quantized, "q8.gguf"))));
}

}  // namespace
}  // namespace channel
