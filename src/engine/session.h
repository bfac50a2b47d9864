// One engine session: a model, its token stream in the KV ring, and the turn state the engine
// owns (whose turn it is, whether the model is inside a thought, what the sampler must mask).
// Each public call is one client request; events report progress and output as it happens.
// Behaviour follows the original Channel engine (reference: original-channel.md §1.5, §2).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/thread_pool.h"
#include "engine/centroid_scan.h"
#include "engine/elastic_yield.h"
#include "engine/episode_stage.h"
#include "engine/episode_file.h"
#include "engine/episode_store.h"
#include "engine/episodic_memory_options.h"
#include "engine/sampler.h"
#include "engine/session_config.h"
#include "engine/session_events.h"
#include "engine/special_tokens.h"
#include "engine/stream_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace channel {

inline constexpr uint8_t kInputFlagReason = 0x02;
inline constexpr uint8_t kInputFlagRaw = 0x80;

struct ProbeResult {
  uint16_t index = 0;        // winning candidate (0 for generative probes)
  float confidence = 0.0f;   // softmax probability of the winner among the candidates
  float entropy = 0.0f;      // of that distribution, in nats
  float cost_ms = 0.0f;
  std::string text;          // generative probes: the decoded text
};

// What OP_SNAPSHOT_SAVE and OP_SNAPSHOT_LOAD report (values as on the wire).
enum class SnapshotOutcome : uint8_t { Saved = 0, Loaded = 1, Exists = 2 };

struct SnapshotReport {
  SnapshotOutcome outcome = SnapshotOutcome::Saved;
  uint16_t active_slots = 0;
  int64_t clock = 0;
  std::string stream_id;
};

// What OP_MEM_QUERY reports (session_memory.cpp).
struct MemoryRecall {
  std::vector<uint64_t> ids;        // the best episodes, best first
  std::vector<int64_t> created_ms;  // theirs, on monotonic_milliseconds()
  uint32_t injected_tokens = 0;     // tokens now in the recall slots
};

// The episodes of `ranked` (best first) that go into the recall slots: whole episodes only, as
// many as fit in kRecallSlots, a smaller one further down taking room a larger one left.
std::vector<size_t> whole_episodes_for_recall(const EpisodeStore& store, std::span<const size_t> ranked);

struct Snapshot;

class Session {
 public:
  // Throws channel::Error when the vocabulary lacks the architecture's turn tokens.
  Session(std::shared_ptr<const Model> model, Backend& backend, SessionConfig config);

  // OP_STREAM_INPUT. Throws channel::Error (state unchanged) for token ids outside the vocabulary.
  void input_text(std::string_view text, uint8_t flags, SessionEvents& events);
  void input_tokens(std::span<const int32_t> tokens, uint8_t flags, SessionEvents& events);
  // OP_SET_SYSTEM: a JSON object renders a system turn with tools; other text goes in as is.
  // Throws channel::Error (state unchanged) for a JSON field of the wrong type.
  void set_system(std::string_view payload, SessionEvents& events);
  // OP_TOOL_RETURN: the tool's result, inside the open model turn; decoding continues.
  void tool_return(std::string_view name, std::string_view result, SessionEvents& events);
  // OP_RESUME after an elastic yield: continue, or (close_thought, in a thought) close the
  // thought instead of keeping the held token. With nothing pending it reports the end of turn.
  void resume(bool close_thought, SessionEvents& events);
  // OP_PROBE_AUTONOMIC: leaves no trace in the stream (rolled back exactly, also when it throws).
  ProbeResult probe(std::string_view prompt, const std::vector<std::string>& candidates, uint16_t max_decode_tokens,
                    SessionEvents& events);

  // OP_SNAPSHOT_SAVE (session_snapshot.cpp): the whole session, turn state included, written
  // to `path` through `<path>.tmp`, fsync and rename, before this returns. If the clock has not
  // moved since the last successful save or load, nothing is written (outcome Exists).
  SnapshotReport save_snapshot(const std::string& path, std::string_view stream_id);
  // OP_SNAPSHOT_LOAD: the session continues exactly where the snapshot was taken. Throws
  // channel::Error, with the session unchanged, for a file that is unreadable, corrupt, or
  // taken with another model or KV geometry.
  SnapshotReport load_snapshot(const std::string& path);

  // OP_MEM_COMMIT: the tokens decoded since the last commit become an episode (nothing when none
  // are staged). Decode bursts commit by themselves when they end and every 64 tokens.
  void commit_memory() { commit_episode(/*interrupted=*/false); }
  // Sets up episodic memory before the first input (session_memory_setup.cpp): with a path, the
  // store file's episodes are loaded now and every later commit is appended to it (fsynced)
  // before the commit returns. Returns the store file's notices, one line each (another model's
  // store left beside, a torn record cut off). Throws channel::Error as EpisodeFile does, or
  // once episodes have been committed.
  std::vector<std::string> configure_memory(const EpisodicMemoryOptions& options);
  const EpisodeStore& episodes() const { return episodes_; }
  // OP_MEM_QUERY: scores the episodes against `query_text` (the normalised sum of its tokens'
  // input embeddings) and writes the KV of the best `top_k`, whole, into the recall slots (the
  // best nearest the live ring), replacing the recall before; global layers read them from the
  // next token on. Nothing changes when there is no episode or the query has no tokens. The
  // same recall runs, with the input as the query, before every prefill of host input (user
  // input, system prompt, tool result; not probes, not the tokens the engine writes itself).
  MemoryRecall recall_memory(std::string_view query_text, size_t top_k);

  // OP_ABORT: checked between prefill chunks and before every generated token.
  std::atomic<bool>& abort_flag() { return abort_; }

  SessionConfig& config() { return config_; }
  const StreamContext& stream() const { return context_; }
  int64_t clock() const { return context_.clock(); }
  uint16_t active_slots() const;
  // A STATUS report in this state: the active slots and the stored episodes filled in.
  StatusReport status_report(EngineStatus status) const;
  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  void start_request();
  std::vector<int32_t> encode(std::string_view text, bool bos_at_start) const;
  void set_anchors_for_first_input(std::span<const int32_t> tokens, bool whole_input);
  void close_open_turn();
  // Episodic memory's recall ahead of the prefill of `input` (session_memory.cpp).
  void recall_before_prefill(std::span<const int32_t> input);
  bool prefill(std::span<const int32_t> tokens, SessionEvents& events);
  void enter_turn_state_after(std::span<const int32_t> prefilled);
  // `resume_token`: a token already streamed to the client that must be fed first (resume).
  void decode_burst(SessionEvents& events, std::optional<int32_t> resume_token = std::nullopt);
  // The steps of a burst. decode_step handles the sampled token and samples the next one, or
  // says why the burst stops.
  struct Burst;
  Burst begin_burst(std::optional<int32_t> resume_token);
  std::optional<StopReason> decode_step(SessionEvents& events, Burst& burst);
  void enter_thought(Burst& burst);
  void close_thought_state();
  void collect_tool_call(SessionEvents& events);
  std::optional<StopReason> stream_token(SessionEvents& events, Burst& burst);
  bool yields_after(int32_t token, std::string_view piece, const Burst& burst) const;
  void report_progress(SessionEvents& events, const Burst& burst);
  bool thinking_budget_spent(const Burst& burst, std::string_view piece) const;
  void bridge_out_of_thought(SessionEvents& events, Burst& burst);
  void finish_burst(SessionEvents& events, const Burst& burst, StopReason reason);
  Boundary boundary_after(int32_t token, std::string_view piece) const;
  bool ends_line(int32_t token) const;
  float top_two_margin() const;
  // Feeds a token the engine writes itself (turn grammar, the budget bridge): never staged.
  void feed(int32_t token);
  // Feeds a token the model decoded, staging it for episodic memory.
  void feed_decoded(int32_t token);
  void commit_episode(bool interrupted);
  std::vector<float> query_vector(std::span<const int32_t> tokens) const;
  // What recall_memory and recall_before_prefill share: the best `top_k` episodes for the query
  // tokens, whole, into the recall slots.
  MemoryRecall recall_episodes(std::span<const int32_t> query_tokens, size_t top_k);
  // Ids no token of the current turn state may be: never-sampled ones, <|channel> when thinking
  // is suppressed, into `masked` (replacing what it held). sample_next adds the one-token masks of
  // the decode loop.
  void turn_mask(std::vector<int32_t>& masked) const;
  int32_t sample_next();
  void report_idle(SessionEvents& events, float tokens_per_second, uint32_t tokens);
  // The two kinds of probe (session_probe.cpp), run on transient tokens.
  void score_candidates(std::span<const int32_t> tokens, std::span<const int32_t> candidate_tokens,
                        ProbeResult& result);
  std::string generate_probe_text(std::span<const int32_t> tokens, int decode_tokens);
  Snapshot capture_snapshot(std::string stream_id) const;
  void apply_snapshot(const Snapshot& snapshot);

  std::shared_ptr<const Model> model_;
  Tokenizer tokenizer_;
  SpecialTokens special_;
  SessionConfig config_;
  StreamContext context_;
  Sampler sampler_;
  Logits logits_;                // logits after the last fed token
  std::vector<int32_t> recent_;  // tokens generated in this burst (penalty window)
  std::vector<int32_t> sample_mask_;  // sample_next's masked ids, kept so a step allocates none
  std::vector<float> last_hidden_;  // of the last decoded token
  EpisodeStage stage_;
  EpisodeStore episodes_;
  bool memory_enabled_ = true;
  std::unique_ptr<EpisodeFile> episode_file_;  // with --memory: where commits are appended
  // The scan of episodes_ (configure_memory makes it anew with the store).
  std::unique_ptr<CentroidScan> scan_;
  std::atomic<bool> abort_{false};

  bool turn_open_ = false;             // the model's turn has begun and not ended
  bool in_thought_ = false;            // inside <|channel>thought ... <channel|>
  bool suppress_thinking_ = true;      // <|channel> may not be sampled
  bool mask_channel_close_once_ = false;  // first token of a thought may not close it
  bool suppress_critique_ = false;        // the next thought token starts a line
  std::optional<int32_t> pending_yield_;  // streamed at an elastic yield, not yet fed
  SyntaxTracker syntax_;                   // of the current burst's text
  int32_t previous_ = -1, before_previous_ = -1;  // last streamed tokens of the burst
  int32_t period_ = -1, question_ = -1, exclamation_ = -1;
  std::optional<int64_t> last_snapshot_clock_;  // of the last successful save or load
};

}  // namespace channel
