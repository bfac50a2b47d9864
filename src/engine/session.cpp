#include "engine/session.h"

#include <algorithm>
#include <limits>

#include "core/elapsed.h"
#include "core/error.h"
#include "engine/tool_call.h"
#include "engine/turn_grammar.h"

namespace channel {
namespace {

// Prefill chunk: progress is reported after each (an abort is noticed between any two layers).
constexpr size_t kPrefillChunk = 64;
// The first input of a session without a system prompt anchors at most this many tokens.
constexpr size_t kMaxImplicitAnchors = 512;
// A tool call's text is collected up to this many bytes.
constexpr size_t kMaxToolCallBytes = 4096;
// A thought's header ("thought\n") is at most this many tokens.
constexpr int kMaxThoughtHeaderTokens = 16;
// Bridge text fed when the thinking budget runs out (the original engine's wording).
constexpr std::string_view kBudgetBridge =
    "\n\nIdentified steps complete. To execute across multiple stages, invoke `plan()`. Otherwise, deliver the final "
    "answer.\n";

bool ends_a_sentence(std::string_view piece) {
  return !piece.empty() && std::string_view("\n.!?:").find(piece.back()) != std::string_view::npos;
}

}  // namespace

Session::Session(std::shared_ptr<const Model> model, Backend& backend, SessionConfig config)
    : model_(std::move(model)),
      tokenizer_(Tokenizer::from_gguf(model_->gguf())),
      special_(SpecialTokens::find(tokenizer_, model_->config().arch)),
      config_(config),
      context_(backend, model_->config()),
      sampler_(config.sampler),
      scan_(std::make_unique<CentroidScan>(episodes_, backend, 1)),
      period_(tokenizer_.find_token(".")),
      question_(tokenizer_.find_token("?")),
      exclamation_(tokenizer_.find_token("!")) {
  // Every turn the engine writes is bracketed by these two; without them it cannot keep the
  // stream a valid conversation (a Gemma 3 model given a Gemma 4 vocabulary, say).
  if (special_.turn_open < 0 || special_.turn_close < 0) {
    fail("the model's vocabulary has no {} turn tokens ({}): the engine cannot write its turns",
         arch_display_name(model_->config().arch),
         model_->config().arch == ModelArch::Gemma3 ? "<start_of_turn>, <end_of_turn>" : "<|turn>, <turn|>");
  }
}

uint16_t Session::active_slots() const {
  return static_cast<uint16_t>(std::min<size_t>(context_.ring().global_view().size(), UINT16_MAX));
}

StatusReport Session::status_report(EngineStatus status) const {
  StatusReport report;
  report.status = status;
  report.active_slots = active_slots();
  report.archived_episodes = static_cast<uint16_t>(std::min<size_t>(episodes_.episodes().size(), UINT16_MAX));
  return report;
}

void Session::start_request() {
  abort_ = false;
  sampler_.set_options(config_.sampler);
}

std::vector<int32_t> Session::encode(std::string_view text, bool bos_at_start) const {
  return tokenizer_.encode(text, /*add_special=*/bos_at_start && clock() == 0, /*parse_special=*/true);
}

void Session::set_anchors_for_first_input(std::span<const int32_t> tokens, bool whole_input) {
  if (clock() != 0) return;
  // The system prompt (or, without one, the first turn up to its <turn|>) becomes Tier 1.
  size_t anchors = std::min(tokens.size(), kMaxImplicitAnchors);
  if (whole_input) {
    anchors = tokens.size();
  } else if (const auto close = std::find(tokens.begin(), tokens.end(), special_.turn_close); close != tokens.end()) {
    anchors = static_cast<size_t>(close - tokens.begin()) + 1;
  }
  context_.ring().set_anchor_count(static_cast<uint32_t>(std::min<size_t>(anchors, kv::kMaxAnchors)));
}

void Session::close_open_turn() {
  // Barge-in: the model's unfinished turn is closed before anything else enters the stream.
  if (!turn_open_) return;
  context_.ring().mark_span(kv::SpanType::TurnEnd);
  feed(special_.turn_close);
  turn_open_ = false;
  in_thought_ = false;
}

bool Session::prefill(std::span<const int32_t> tokens, SessionEvents& events) {
  StatusReport report = status_report(EngineStatus::Encoding);
  report.total = static_cast<uint32_t>(tokens.size());
  events.status(report);
  Logits chunk_logits;
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(kPrefillChunk, tokens.size() - done);
    // An abort stops the chunk between two layers and leaves no trace of it: the stream (and
    // the last logits) end with the chunks done before.
    if (!context_.append(tokens.subspan(done, n), LogitsWanted::Last, chunk_logits, {}, [this] { return abort_.load(); })) {
      return false;
    }
    logits_ = std::move(chunk_logits);
    done += n;
    report.active_slots = active_slots();
    report.current = static_cast<uint32_t>(done);
    events.status(report);
  }
  return true;
}

void Session::enter_turn_state_after(std::span<const int32_t> prefilled) {
  // The last channel marker of what was prefilled decides where the model now writes.
  for (auto it = prefilled.rbegin(); it != prefilled.rend(); ++it) {
    if (*it == special_.channel_close) {
      in_thought_ = false;
      return;
    }
    if (*it == special_.channel_open) {
      in_thought_ = true;
      return;
    }
    if (*it == special_.turn_close) break;
  }
  in_thought_ = false;
}

void Session::input_text(std::string_view text, uint8_t flags, SessionEvents& events) {
  const bool verbatim = (flags & kInputFlagRaw) != 0 || text.starts_with("<|turn>");
  const std::string rendered =
      verbatim ? std::string(text) : render_user_input(model_->config().arch, text, (flags & kInputFlagReason) != 0);
  input_tokens(encode(rendered, /*bos_at_start=*/true), flags, events);
}

void Session::input_tokens(std::span<const int32_t> tokens, uint8_t flags, SessionEvents& events) {
  for (int32_t token : tokens) {
    if (token < 0 || token >= tokenizer_.n_vocab()) {
      fail("token id {} is outside the vocabulary (0..{})", token, tokenizer_.n_vocab() - 1);
    }
  }
  if (tokens.empty()) fail("the input has no tokens");
  start_request();
  pending_yield_.reset();  // a barge-in drops the token held at a yield
  // As the original: the user boundary is marked before a barge-in closes the model's turn, so
  // the closing <turn|> and the new turn form one span (the close relabels it turn_end).
  context_.ring().mark_span(kv::SpanType::User);
  if (!tokens.empty() && tokens.front() != special_.turn_close) close_open_turn();
  set_anchors_for_first_input(tokens, /*whole_input=*/false);
  recall_before_prefill(tokens);
  if (!prefill(tokens, events)) {
    events.turn_complete(TurnSummary{0, 0, 0.0f, StopReason::Aborted});
    report_idle(events, 0.0f, 0);
    return;
  }
  suppress_thinking_ = (flags & kInputFlagReason) == 0 || !special_.has_thinking();
  enter_turn_state_after(tokens);
  decode_burst(events);
}

void Session::set_system(std::string_view payload, SessionEvents& events) {
  if (payload.empty()) return;
  // Rendered first: a JSON payload that is refused leaves the session as it was.
  const auto rendered = render_system_turn(model_->config().arch, payload);
  start_request();
  const std::vector<int32_t> tokens = encode(rendered ? *rendered : payload, /*bos_at_start=*/true);
  if (tokens.empty()) return;
  close_open_turn();
  set_anchors_for_first_input(tokens, /*whole_input=*/true);
  context_.ring().mark_span(kv::SpanType::System);
  recall_before_prefill(tokens);
  prefill(tokens, events);
  report_idle(events, 0.0f, 0);
}

void Session::tool_return(std::string_view name, std::string_view result, SessionEvents& events) {
  // Rendered first: a result that is refused leaves the session (and a held yield) as it was.
  const std::vector<int32_t> tokens = encode(render_tool_response(name, result), /*bos_at_start=*/false);
  start_request();
  pending_yield_.reset();
  context_.ring().mark_span(kv::SpanType::ToolResult);
  recall_before_prefill(tokens);
  if (!prefill(tokens, events)) {
    events.turn_complete(TurnSummary{0, 0, 0.0f, StopReason::Aborted});
    report_idle(events, 0.0f, 0);
    return;
  }
  suppress_thinking_ = !special_.has_thinking();
  enter_turn_state_after(tokens);
  decode_burst(events);
}

void Session::resume(bool close_thought, SessionEvents& events) {
  start_request();
  if (!pending_yield_) {
    events.turn_complete(TurnSummary{0, 0, 0.0f, StopReason::EndOfTurn});
    report_idle(events, 0.0f, 0);
    return;
  }
  int32_t token = *pending_yield_;
  pending_yield_.reset();
  if (close_thought && in_thought_) {
    // The held token never enters the stream: the thought is closed in its place.
    in_thought_ = false;
    suppress_thinking_ = true;
    context_.ring().mark_span(kv::SpanType::ResponseSentence);
    token = special_.channel_close;
  } else {
    suppress_thinking_ = !in_thought_;
  }
  decode_burst(events, token);
}

void Session::report_idle(SessionEvents& events, float tokens_per_second, uint32_t tokens) {
  StatusReport report = status_report(EngineStatus::Idle);
  report.tokens_per_second = tokens_per_second;
  report.current = report.total = tokens;
  events.status(report);
}

void Session::feed(int32_t token) {
  context_.append(std::span<const int32_t>(&token, 1), LogitsWanted::Last, logits_);
}

void Session::feed_decoded(int32_t token) {
  context_.append(std::span<const int32_t>(&token, 1), LogitsWanted::Last, logits_, {}, {}, &last_hidden_);
  if (!memory_enabled_) return;
  const int64_t token_clock = clock() - 1;
  stage_.stage(StagedToken{token, context_.ring().slot_of(token_clock), token_clock, monotonic_milliseconds()},
               last_hidden_);
  if (stage_.full()) commit_episode(/*interrupted=*/false);
}

void Session::commit_episode(bool interrupted) {
  auto episode = stage_.commit(context_.ring(), context_.backend(), interrupted);
  if (!episode) return;
  const Episode& committed = episodes_.add(std::move(*episode));
  if (episode_file_) episode_file_->append(committed, episodes_);
}

void Session::turn_mask(std::vector<int32_t>& masked) const {
  masked.assign(special_.never_sampled.begin(), special_.never_sampled.end());
  if (suppress_thinking_ && special_.channel_open >= 0) masked.push_back(special_.channel_open);
}

int32_t Session::sample_next() {
  std::vector<int32_t>& masked = sample_mask_;  // kept: its capacity outlives the step
  turn_mask(masked);
  if (mask_channel_close_once_ && special_.channel_close >= 0) masked.push_back(special_.channel_close);
  mask_channel_close_once_ = false;
  if (suppress_critique_) masked.insert(masked.end(), special_.critique.begin(), special_.critique.end());
  return sampler_.sample(logits_.row(0), masked, recent_);
}

bool Session::ends_line(int32_t token) const {
  return token == special_.newline || token == special_.paragraph || tokenizer_.token_text(token).ends_with('\n');
}

Boundary Session::boundary_after(int32_t token, std::string_view piece) const {
  const auto ends_sentence = [this](int32_t t) { return t == period_ || t == question_ || t == exclamation_; };
  Boundary b;
  b.paragraph = token == special_.paragraph || piece.ends_with("\n\n");
  b.sentence_newline =
      (token == special_.newline && (previous_ == special_.paragraph || ends_sentence(previous_) ||
                                     ends_sentence(before_previous_))) ||
      piece.ends_with(".\n") || piece.ends_with("?\n") || piece.ends_with("!\n");
  return b;
}

float Session::top_two_margin() const {
  float first = -std::numeric_limits<float>::infinity(), second = first;
  for (float v : logits_.row(0)) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  return first - second;
}

// One decode burst, from its first sampled token to the reason it stops.
struct Session::Burst {
  SteadyClock::time_point start = SteadyClock::now();
  uint32_t status_total = 0;          // the token count STATUS frames report against
  uint32_t thinking = 0, response = 0;  // streamed tokens of each channel
  int32_t current = -1;               // sampled, not yet handled
  uint32_t tokens() const { return thinking + response; }
};

void Session::decode_burst(SessionEvents& events, std::optional<int32_t> resume_token) {
  Burst burst = begin_burst(resume_token);
  std::optional<StopReason> stop;
  while (!(stop = decode_step(events, burst))) {
  }
  finish_burst(events, burst, *stop);
}

Session::Burst Session::begin_burst(std::optional<int32_t> resume_token) {
  turn_open_ = true;
  recent_.clear();
  // Room for a whole burst (its answer, a spent thinking budget and its bridge), so that decoding
  // allocates nothing; a larger max_tokens than the cap grows the window as it goes.
  constexpr size_t kMaxReservedTokens = 8192;
  recent_.reserve(std::min<size_t>(size_t{config_.max_tokens} + config_.thinking_budget + 64, kMaxReservedTokens));
  syntax_.reset();
  previous_ = before_previous_ = -1;
  // A held newline fed on resume starts a thought line like any other.
  suppress_critique_ = resume_token && in_thought_ && ends_line(*resume_token);
  if (resume_token) feed_decoded(*resume_token);
  Burst burst;
  burst.status_total = config_.max_tokens + config_.thinking_budget;
  burst.current = sample_next();
  return burst;
}

std::optional<StopReason> Session::decode_step(SessionEvents& events, Burst& burst) {
  int32_t& current = burst.current;
  if (abort_) return StopReason::Aborted;
  if (current == special_.eos || current == special_.turn_close) {
    feed_decoded(current);
    turn_open_ = false;
    in_thought_ = false;
    return StopReason::EndOfTurn;
  }
  if (current == special_.channel_open && (suppress_thinking_ || in_thought_)) {
    current = special_.channel_close;  // a suppressed channel open becomes a channel close
  }
  if (current == special_.channel_open) {
    enter_thought(burst);
  } else if (current == special_.channel_close) {
    // Out of the thought channel, for good: one thinking phase per turn.
    close_thought_state();
    context_.ring().mark_span(kv::SpanType::ResponseSentence);
    feed_decoded(current);
    current = sample_next();
  } else if (current == special_.tool_call_open) {
    collect_tool_call(events);
    return StopReason::ToolCall;
  } else if (current == special_.turn_open || current == special_.think) {
    feed_decoded(current);  // grammar tokens the model writes itself: kept, not streamed
    current = sample_next();
  } else {
    return stream_token(events, burst);
  }
  return std::nullopt;
}

void Session::enter_thought(Burst& burst) {
  // Into the thought channel: the header ("thought\n") is fed silently; the first token of the
  // thought may not close it again.
  in_thought_ = true;
  burst.thinking = 0;
  suppress_critique_ = false;
  context_.ring().mark_span(kv::SpanType::Thought);
  feed_decoded(burst.current);
  int32_t& current = burst.current;
  current = sample_next();
  for (int i = 0; i < kMaxThoughtHeaderTokens; ++i) {
    if (current == special_.channel_close || current == special_.eos || current == special_.turn_close) break;
    const bool newline = current == special_.newline || current == special_.paragraph;
    feed_decoded(current);
    mask_channel_close_once_ = newline;
    current = sample_next();
    if (newline) break;
  }
}

void Session::close_thought_state() {
  in_thought_ = false;
  suppress_thinking_ = true;
  suppress_critique_ = false;
}

void Session::collect_tool_call(SessionEvents& events) {
  // A tool call: its body is collected silently up to <tool_call|>.
  feed_decoded(special_.tool_call_open);
  context_.ring().mark_span(kv::SpanType::ToolCall);
  std::string notation, text;
  int32_t next = sample_next();
  while (next != special_.tool_call_close && next != special_.turn_close && next != special_.eos &&
         notation.size() < kMaxToolCallBytes && !abort_) {
    notation += tokenizer_.token_text(next);
    text += tokenizer_.token_piece(next, /*render_special=*/true);
    feed_decoded(next);
    next = sample_next();
  }
  events.tool_call(parse_tool_call(notation, text));
  if (next == special_.tool_call_close) feed_decoded(next);
}

std::optional<StopReason> Session::stream_token(SessionEvents& events, Burst& burst) {
  const int32_t token = burst.current;
  if (in_thought_) {
    ++burst.thinking;
  } else {
    if (burst.response >= config_.max_tokens) return StopReason::MaxTokens;
    ++burst.response;
  }
  const std::string& piece = tokenizer_.token_text(token);
  events.token(token, clock(), piece, in_thought_);
  syntax_.feed(piece);
  if (yields_after(token, piece, burst)) {
    // Hold the token (streamed, not fed) until OP_RESUME or new input.
    pending_yield_ = token;
    if (!in_thought_) context_.ring().mark_span(kv::SpanType::ResponseSentence);
    return StopReason::ElasticYield;
  }
  before_previous_ = previous_;
  previous_ = token;
  if (burst.tokens() % 8 == 0) report_progress(events, burst);
  feed_decoded(token);
  recent_.push_back(token);
  // A thought line may not open with self-critique ("Wait", "Actually", ...), as in the original.
  suppress_critique_ = in_thought_ && ends_line(token);
  if (thinking_budget_spent(burst, piece)) bridge_out_of_thought(events, burst);
  burst.current = sample_next();
  return std::nullopt;
}

bool Session::yields_after(int32_t token, std::string_view piece, const Burst& burst) const {
  if (!syntax_.at_rest()) return false;
  const Boundary boundary = boundary_after(token, piece);
  return (boundary.paragraph || boundary.sentence_newline) &&
         should_yield(in_thought_, in_thought_ ? burst.thinking : burst.response, boundary,
                      in_thought_ ? 0.0f : top_two_margin());
}

void Session::report_progress(SessionEvents& events, const Burst& burst) {
  const double ms = milliseconds_since(burst.start);
  StatusReport report = status_report(EngineStatus::Generating);
  report.tokens_per_second = static_cast<float>(burst.tokens() * 1000.0 / std::max(ms, 1.0));
  report.current = burst.tokens();
  report.total = burst.status_total;
  events.status(report);
}

bool Session::thinking_budget_spent(const Burst& burst, std::string_view piece) const {
  const uint32_t budget = config_.thinking_budget;
  return in_thought_ && special_.has_thinking() &&
         ((burst.thinking >= budget && ends_a_sentence(piece)) || burst.thinking >= budget + 32);
}

void Session::bridge_out_of_thought(SessionEvents& events, Burst& burst) {
  // Thinking budget spent: the bridge text closes the thought and the answer follows.
  for (int32_t bridge : encode(kBudgetBridge, /*bos_at_start=*/false)) {
    events.token(bridge, clock(), tokenizer_.token_text(bridge), true);
    feed(bridge);
  }
  close_thought_state();
  burst.thinking = 0;  // as the original: TURN_COMPLETE's count restarts after the bridge
  feed(special_.channel_close);
}

void Session::finish_burst(SessionEvents& events, const Burst& burst, StopReason reason) {
  commit_episode(/*interrupted=*/reason == StopReason::Aborted);
  if (reason != StopReason::ElasticYield) context_.ring().mark_span(kv::SpanType::TurnEnd);
  const uint32_t tokens = burst.tokens();
  const double ms = std::max(1.0, milliseconds_since(burst.start));
  const float rate = tokens <= 1 ? static_cast<float>(tokens) : static_cast<float>((tokens - 1) * 1000.0 / ms);
  events.turn_complete(TurnSummary{tokens, static_cast<uint32_t>(ms), rate, reason});
  report_idle(events, rate, tokens);
}

}  // namespace channel
