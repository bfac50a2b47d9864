// The ring driving a real forward pass: exact rollback of transient tokens (also after the ring
// wrapped and anchors moved, and of probes long enough to overwrite live ring slots), and a
// long stream that neither leaks nor loses its anchors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/stream_context.h"
#include "forwarding_backend.h"
#include "relative_l2.h"
#include "test_models.h"

namespace channel {
namespace {

using testing::TempDir;

SynthOptions small_model(ModelArch arch) {
  SynthOptions o = default_synth_options(arch);
  o.n_layer = 2;
  o.sliding_period = 2;  // layer 0 sliding, layer 1 global
  o.n_embd = 64;
  o.n_head = 2;
  o.n_head_kv = 1;
  o.n_head_kv_global = 1;
  o.head_dim = 32;
  o.head_dim_global = 32;
  o.n_ff = 64;
  o.sliding_window = 16;
  return o;
}

std::vector<int32_t> tokens_from(int64_t start, int n, int n_vocab) {
  std::vector<int32_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>(((start + i) * 2654435761u) % n_vocab);
  return tokens;
}

// Feeds `total` tokens in chunks of `chunk` after `anchors` anchor tokens.
void feed(StreamContext& context, int64_t total, int chunk, int n_vocab) {
  Logits logits;
  while (context.clock() < total) {
    const int n = static_cast<int>(std::min<int64_t>(chunk, total - context.clock()));
    context.append(tokens_from(context.clock(), n, n_vocab), LogitsWanted::Last, logits);
  }
}

// The logits of `next` after a stream of `stream_length` tokens (fed `chunk` at a time) with
// `anchors` anchors that never ran a probe: what a probed stream must give bit for bit.
Logits logits_of_an_unprobed_stream(const std::shared_ptr<const Model>& model, uint32_t anchors,
                                    int64_t stream_length, int chunk, const std::vector<int32_t>& next) {
  cpu::CpuBackend backend(model, 2);
  StreamContext plain(backend, model->config());
  plain.ring().set_anchor_count(anchors);
  feed(plain, stream_length, chunk, model->config().n_vocab);
  Logits logits;
  plain.append(next, LogitsWanted::All, logits);
  return logits;
}

// Records the slots whose KV the stream writes back and whose keys it moves, so a test can tell
// what a rollback touched.
class RecordingBackend final : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void rotate_keys(std::span<const uint32_t> slots, int64_t delta) override {
    moved.insert(moved.end(), slots.begin(), slots.end());
    ForwardingBackend::rotate_keys(slots, delta);
  }
  void write_kv(const KvBlob& blob) override {
    written.insert(written.end(), blob.slots.begin(), blob.slots.end());
    ForwardingBackend::write_kv(blob);
  }
  void forget() {
    moved.clear();
    written.clear();
  }
  std::vector<uint32_t> moved, written;
};

std::vector<uint32_t> sorted(std::vector<uint32_t> slots) {
  std::sort(slots.begin(), slots.end());
  return slots;
}

std::vector<uint32_t> distinct(std::vector<uint32_t> slots) {
  slots = sorted(std::move(slots));
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

class Rollback : public ::testing::TestWithParam<ModelArch> {};

TEST_P(Rollback, TransientTokensLeaveNoTraceAfterTheRingWrapped) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(GetParam()), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  // Many anchors leave a short ring (W = 3968 - 3800 = 168), so it wraps and the anchors move
  // within a few hundred tokens.
  const uint32_t anchors = 3800;
  const int64_t stream_length = anchors + 1000;
  const auto next = tokens_from(stream_length, 3, n_vocab);

  const Logits expected = logits_of_an_unprobed_stream(model, anchors, stream_length, 97, next);

  cpu::CpuBackend probed_backend(model, 2);
  StreamContext probed(probed_backend, model->config());
  probed.ring().set_anchor_count(anchors);
  feed(probed, stream_length, 97, n_vocab);
  ASSERT_GT(probed.ring().oldest_live_clock(), anchors + 500) << "the ring has wrapped";
  for (int n : {1, 5, 128}) {
    const int64_t saved = probed.begin_transient();
    Logits probe;
    probed.append(tokens_from(7 * n, n, n_vocab), LogitsWanted::Last, probe);
    probed.rollback(saved);
  }
  Logits actual;
  probed.append(next, LogitsWanted::All, actual);
  EXPECT_EQ(actual.values, expected.values);  // bit-identical
}

TEST_P(Rollback, ProbeOf2048TokensLeavesNoTraceAndTheRollbackTouchesOnlyWhatItChanged) {
  // The longest probe a session runs (2048 prompt tokens, then 15 generated ones fed one at a
  // time) on a wrapped ring: past the 128 scratch slots it overwrites the 1935 oldest live ring
  // tokens, and its far queries move the anchors. The rollback writes back exactly those slots'
  // KV and moves exactly the anchors, and the stream goes on bit-identically.
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(GetParam()), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  const uint32_t anchors = 100;
  const int64_t stream_length = anchors + kv::ring_size(anchors) + 600;
  const auto next = tokens_from(stream_length, 3, n_vocab);

  const Logits expected = logits_of_an_unprobed_stream(model, anchors, stream_length, 509, next);

  cpu::CpuBackend cpu(model, 2);
  RecordingBackend backend(cpu);
  StreamContext probed(backend, model->config());
  probed.ring().set_anchor_count(anchors);
  feed(probed, stream_length, 509, n_vocab);
  ASSERT_GT(probed.ring().oldest_live_clock(), anchors + 500) << "the ring has wrapped";
  const kv::RingState before = probed.ring().state();
  const int prompt = 2048, generated = 15;
  std::vector<uint32_t> oldest_live;  // the slots the probe must overwrite, oldest first
  for (int i = 0; i < prompt + generated - static_cast<int>(kv::kScratchSlots); ++i) {
    oldest_live.push_back(probed.ring().slot_of(probed.ring().oldest_live_clock() + i));
  }
  std::vector<uint32_t> anchor_slots(anchors);
  std::iota(anchor_slots.begin(), anchor_slots.end(), 0u);

  // A short probe stays in the scratch: its rollback writes no KV back.
  backend.forget();
  int64_t saved = probed.begin_transient();
  Logits probe;
  probed.append(tokens_from(11, 100, n_vocab), LogitsWanted::Last, probe);
  probed.rollback(saved);
  EXPECT_TRUE(backend.written.empty());

  backend.forget();
  saved = probed.begin_transient();
  probed.append(tokens_from(7, prompt, n_vocab), LogitsWanted::Last, probe);
  for (int i = 0; i < generated; ++i) probed.append(tokens_from(i, 1, n_vocab), LogitsWanted::Last, probe);
  for (float v : probe.row(0)) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(distinct(backend.moved), anchor_slots) << "the probe's last queries moved the anchors";
  EXPECT_TRUE(backend.written.empty());
  backend.forget();
  probed.rollback(saved);
  EXPECT_EQ(sorted(backend.written), sorted(oldest_live));
  EXPECT_EQ(sorted(backend.moved), anchor_slots);
  EXPECT_EQ(probed.ring().state(), before);

  Logits actual;
  probed.append(next, LogitsWanted::All, actual);
  EXPECT_EQ(actual.values, expected.values);  // bit-identical
}

TEST_P(Rollback, ChunksCancelledBetweenLayersLeaveNoTrace) {
  // An abort stops a prefill chunk after some layers have written their KV into slots that held
  // live tokens (the ring has wrapped) and after the chunk moved the anchors: the stream must go
  // on exactly as if the chunk had never started.
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(GetParam()), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  const uint32_t anchors = 3800;  // a 168-slot ring: it wraps and the anchors move often
  const int64_t stream_length = anchors + 400;

  cpu::CpuBackend plain_backend(model, 2);
  StreamContext plain(plain_backend, model->config());
  plain.ring().set_anchor_count(anchors);
  cpu::CpuBackend cancelled_backend(model, 2);
  StreamContext cancelled(cancelled_backend, model->config());
  cancelled.ring().set_anchor_count(anchors);
  feed(plain, stream_length, 97, n_vocab);
  feed(cancelled, stream_length, 97, n_vocab);

  Logits logits;
  for (int round = 0; round < 24; ++round) {
    int checks = 0;  // the chunk loop asks once, then each layer: stop before the second layer
    const auto stop_after_one_layer = [&checks] { return ++checks > 2; };
    EXPECT_FALSE(cancelled.append(tokens_from(9000 + round, 64, n_vocab), LogitsWanted::Last, logits, {},
                                  stop_after_one_layer));
    EXPECT_EQ(checks, 3);
    const auto real = tokens_from(cancelled.clock(), 37, n_vocab);
    ASSERT_TRUE(plain.append(real, LogitsWanted::Last, logits));
    ASSERT_TRUE(cancelled.append(real, LogitsWanted::Last, logits));
    ASSERT_EQ(cancelled.ring().state(), plain.ring().state()) << "round " << round;
  }
  ASSERT_GT(cancelled.ring().oldest_live_clock(), anchors + 500) << "the ring has wrapped";
  const auto next = tokens_from(stream_length + 5000, 3, n_vocab);
  Logits expected, actual;
  plain.append(next, LogitsWanted::All, expected);
  cancelled.append(next, LogitsWanted::All, actual);
  EXPECT_EQ(actual.values, expected.values);  // bit-identical
}

INSTANTIATE_TEST_SUITE_P(Archs, Rollback, ::testing::Values(ModelArch::Gemma3, ModelArch::Gemma4),
                         [](const auto& info) { return std::string(info.param == ModelArch::Gemma3 ? "gemma3" : "gemma4"); });

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// One forward pass of `tokens` at `positions` into `slots`, every layer reading `view` (which
// includes the batch's own slots): a stream laid out by hand.
Logits run_at(Backend& backend, const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
              const std::vector<uint32_t>& slots, const std::vector<uint32_t>& view) {
  AttentionView attention;
  attention.global_slots.runs[0] = view;
  attention.sliding_slots.runs[0] = view;
  Logits logits;
  backend.forward(Batch{tokens, positions, slots, {}}, attention, LogitsWanted::Last, {}, logits);
  return logits;
}

std::vector<uint32_t> slot_range(uint32_t first, uint32_t n) {
  std::vector<uint32_t> slots(n);
  std::iota(slots.begin(), slots.end(), first);
  return slots;
}

std::vector<int32_t> position_range(int32_t first, int32_t n) {
  std::vector<int32_t> positions(n);
  std::iota(positions.begin(), positions.end(), first);
  return positions;
}

class Recall : public ::testing::TestWithParam<ModelArch> {};

// Recall's exactness: the KV of 8 tokens run at positions 1016.. after 16 of context at 1000..,
// moved into recall slots at positions 16.. (kv_moved_to), gives the next tokens the logits of a
// stream that ran all 24 tokens at 0.. in order. Attention depends on relative positions only,
// so the two differ by rounding alone (the moved keys are rotated once more from their f16
// first-written form): within twice the model's own spread when the whole stream is run 1000
// positions on (measured: 8.6e-4 / 1.0e-3 against spreads of 9.6e-4 / 9.1e-4 for gemma3 /
// gemma4; keys not re-rotated give 0.9 / 1.05), argmax equal.
TEST_P(Recall, KvMovedToNewPositionsActsAsIfRunThere) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(GetParam()), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  const std::vector<int32_t> context = tokens_from(0, 24, n_vocab), next = tokens_from(500, 4, n_vocab);
  const std::vector<int32_t> context_head(context.begin(), context.begin() + 16);

  cpu::CpuBackend source(model, 2);  // the 24 tokens where they were decoded
  run_at(source, context, position_range(1000, 24), slot_range(0, 24), slot_range(0, 24));
  KvBlob episode;
  source.read_kv(slot_range(16, 8), episode);
  ASSERT_EQ(episode.positions.front(), 1016);

  cpu::CpuBackend reference(model, 2);  // all 24 run at 0..23, then the next tokens
  run_at(reference, context, position_range(0, 24), slot_range(0, 24), slot_range(0, 24));
  std::vector<uint32_t> view = slot_range(0, 24);
  for (uint32_t s : slot_range(24, 4)) view.push_back(s);
  const Logits want = run_at(reference, next, position_range(24, 4), slot_range(24, 4), view);

  cpu::CpuBackend recalled(model, 2);  // the first 16 run at 0..15, the 8 recalled to 16..23
  run_at(recalled, context_head, position_range(0, 16), slot_range(0, 16), slot_range(0, 16));
  const std::vector<uint32_t> recall_slots = slot_range(kv::kRecallBase, 8);
  recalled.write_kv(kv_moved_to(episode, recall_slots, position_range(16, 8)));
  view = slot_range(0, 16);
  for (uint32_t s : recall_slots) view.push_back(s);
  for (uint32_t s : slot_range(16, 4)) view.push_back(s);
  const Logits got = run_at(recalled, next, position_range(24, 4), slot_range(16, 4), view);

  // The yardstick: the same 28 tokens all run 1000 positions on (no recall), against the
  // reference: the model's own spread under translation, rounding of RoPE at other angles.
  const Logits translated = run_at(source, next, position_range(1024, 4), slot_range(24, 4), slot_range(0, 28));
  const double spread = testing::relative_l2(translated.row(0), want.row(0));
  // And what the test would see if the keys were not re-rotated.
  KvBlob unrotated = kv_moved_to(episode, recall_slots, position_range(16, 8));
  unrotated.moved_by = episode.moved_by;
  recalled.write_kv(unrotated);
  const Logits wrong = run_at(recalled, next, position_range(24, 4), slot_range(16, 4), view);

  const double rel = testing::relative_l2(got.row(0), want.row(0));
  std::printf("recall moved by -1000 positions: rel L2 %.3g; translation spread %.3g; keys not re-rotated %.3g\n", rel,
              spread, testing::relative_l2(wrong.row(0), want.row(0)));
  EXPECT_LE(rel, 2 * spread);
  EXPECT_GT(testing::relative_l2(wrong.row(0), want.row(0)), 100 * spread);
  const auto argmax = [](std::span<const float> row) { return std::max_element(row.begin(), row.end()) - row.begin(); };
  EXPECT_EQ(argmax(got.row(0)), argmax(want.row(0)));
}

// The stream's side: write_recall puts the episode into the ring's recall slots at the ring's
// positions (read back: the keys as first written, moved by the position change), replaces an
// earlier recall, and leaves the stream unchanged when the backend refuses the KV.
TEST_P(Recall, WriteRecallPlacesTheEpisodeWhereTheRingSaysAndFailsCleanly) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(GetParam()), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  cpu::CpuBackend backend(model, 2);
  StreamContext stream(backend, model->config());
  feed(stream, 40, 8, n_vocab);
  KvBlob episode;
  backend.read_kv(std::vector<uint32_t>{stream.ring().slot_of(20), stream.ring().slot_of(21), stream.ring().slot_of(22)},
                  episode);

  stream.write_recall(episode);
  KvBlob placed;
  backend.read_kv(slot_range(kv::kRecallBase, 3), placed);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(placed.positions[i], stream.ring().slot_position(kv::kRecallBase + static_cast<uint32_t>(i)));
    EXPECT_EQ(placed.moved_by[i], int64_t{placed.positions[i]} - episode.positions[i]);
  }
  for (size_t l = 0; l < episode.layers.size(); ++l) EXPECT_EQ(placed.layers[l], episode.layers[l]);
  const std::vector<uint32_t> global = stream.ring().global_view().to_vector();
  EXPECT_NE(std::find(global.begin(), global.end(), kv::kRecallBase + 2), global.end());
  EXPECT_EQ(std::find(global.begin(), global.end(), kv::kRecallBase + 3), global.end());

  const kv::RingState before = stream.ring().state();
  KvBlob wrong = episode;
  wrong.layers.pop_back();  // a layer short: the backend refuses it
  EXPECT_THROW(stream.write_recall(wrong), Error);
  EXPECT_EQ(stream.ring().state(), before);
  KvBlob after;
  backend.read_kv(slot_range(kv::kRecallBase, 3), after);
  EXPECT_EQ(after, placed);

  KvBlob shorter;
  backend.read_kv(std::vector<uint32_t>{stream.ring().slot_of(30)}, shorter);
  stream.write_recall(shorter);  // replaces the three
  const std::vector<uint32_t> now = stream.ring().global_view().to_vector();
  EXPECT_EQ(std::count_if(now.begin(), now.end(), [](uint32_t s) { return s >= kv::kRecallBase; }), 1);
}

INSTANTIATE_TEST_SUITE_P(Archs, Recall, ::testing::Values(ModelArch::Gemma3, ModelArch::Gemma4),
                         [](const auto& info) { return info.param == ModelArch::Gemma3 ? "gemma3" : "gemma4"; });


TEST(Stream, FiftyThousandTokensStayBoundedAndKeepTheAnchors) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, small_model(ModelArch::Gemma4), "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  cpu::CpuBackend backend(model, 2);
  StreamContext context(backend, model->config());
  const uint32_t anchors = 64;
  context.ring().set_anchor_count(anchors);
  int64_t rss_after_first_wrap = -1;
  Logits logits;
  while (context.clock() < 50000) {
    // Spans of varying length, as turns and sentences would make them.
    context.ring().mark_span(context.clock() % 3 == 0 ? kv::SpanType::User : kv::SpanType::ResponseSentence);
    const int n = 1 + static_cast<int>(context.clock() % 61);
    context.append(tokens_from(context.clock(), n, n_vocab), LogitsWanted::Last, logits);
    for (float v : logits.row(0)) ASSERT_TRUE(std::isfinite(v)) << context.clock();
    const kv::KvRing& ring = context.ring();
    ASSERT_LT(ring.max_global_distance(), kv::kMaxRelativeDistance) << context.clock();
    // Live tokens never exceed the geometry: anchors + ring.
    ASSERT_LE(ring.global_view().size(), kv::kRecallBase) << context.clock();
    if (rss_after_first_wrap < 0 && context.clock() > 2 * kv::kTotalSlots) rss_after_first_wrap = resident_kib();
  }
  for (uint32_t a = 0; a < anchors; ++a) ASSERT_EQ(context.ring().slot_clock(a), a);
  // Memory is flat once the ring is in steady state (allowing allocator noise).
  EXPECT_LT(resident_kib() - rss_after_first_wrap, 2048);
}

}  // namespace
}  // namespace channel
