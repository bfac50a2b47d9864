// Session::probe (OP_PROBE_AUTONOMIC): a question put to the model in transient slots, answered
// by one constrained step over candidates or by a few generated tokens, and rolled back exactly.
#include <algorithm>
#include <cmath>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/session.h"
#include "engine/turn_grammar.h"

namespace channel {
namespace {

// The original's limits: candidates kept, tokens a generative probe decodes, bytes of its text
// (its result buffer; a piece that would overflow it ends the text).
constexpr size_t kMaxProbeCandidates = 32;
constexpr int kMaxProbeDecodeTokens = 16;
constexpr size_t kMaxProbeTextBytes = 128;
// Channel's own bound on a probe's framed prompt (the original has none: its probes overwrite
// the oldest dialogue): every token past the scratch slots costs a live ring slot's KV, kept
// until the rollback.
constexpr size_t kMaxProbePromptTokens = 2048;

}  // namespace

ProbeResult Session::probe(std::string_view prompt, const std::vector<std::string>& candidates,
                           uint16_t max_decode_tokens, SessionEvents& events) {
  const auto start = SteadyClock::now();
  ProbeFraming framing = ProbeFraming::Verbatim;
  if (prompt.find("<|turn>") == std::string_view::npos && special_.has_thinking()) {
    if (!turn_open_) {
      framing = ProbeFraming::BetweenTurns;
    } else if (in_thought_) {
      framing = ProbeFraming::AfterThought;
    }
  }
  const std::vector<int32_t> tokens = encode(render_probe(prompt, framing), /*bos_at_start=*/false);
  std::vector<int32_t> candidate_tokens;
  for (const std::string& candidate : candidates) {
    const auto ids = encode(candidate, /*bos_at_start=*/false);
    if (!ids.empty() && candidate_tokens.size() < kMaxProbeCandidates) candidate_tokens.push_back(ids.front());
  }
  ProbeResult result;
  if (tokens.empty()) return result;
  const bool discrete = max_decode_tokens <= 1 && !candidate_tokens.empty();
  const int decode_tokens = std::min<int>(max_decode_tokens, kMaxProbeDecodeTokens);
  if (tokens.size() > kMaxProbePromptTokens) {
    fail("the probe's prompt is {} tokens, more than the {} a probe may have", tokens.size(), kMaxProbePromptTokens);
  }
  // A generative probe feeds every token it decodes but the last.
  const size_t generated_fed = discrete ? 0 : static_cast<size_t>(std::max(decode_tokens - 1, 0));
  const kv::KvRing& ring = context_.ring();
  if (tokens.size() + generated_fed > ring.transient_capacity()) {
    fail("the probe needs {} transient slots ({} prompt tokens and {} generated), more than the {} there are "
         "({} scratch and the {} ring slots the {} anchors leave)",
         tokens.size() + generated_fed, tokens.size(), generated_fed, ring.transient_capacity(), kv::kScratchSlots,
         ring.ring_slots(), ring.anchor_count());
  }

  StatusReport report = status_report(EngineStatus::Encoding);
  report.total = static_cast<uint32_t>(tokens.size());
  events.status(report);
  // Everything below is transient and rolled back exactly, also when it fails halfway (a
  // session left in transient mode could not take another token). The turn state, the last
  // logits and the sampler are not touched (a generative probe draws from a copy).
  TransientTokens transient(context_);
  if (discrete) {
    score_candidates(tokens, candidate_tokens, result);
  } else {
    result.text = generate_probe_text(tokens, decode_tokens);
  }
  transient.end();
  result.cost_ms = static_cast<float>(milliseconds_since(start));
  return result;
}

void Session::score_candidates(std::span<const int32_t> tokens, std::span<const int32_t> candidate_tokens,
                               ProbeResult& result) {
  // Only the candidates' rows of the output projection are computed.
  Logits candidate_logits;
  context_.append(tokens, LogitsWanted::Candidates, candidate_logits, candidate_tokens);
  const auto values = candidate_logits.row(0);
  const float max_value = *std::max_element(values.begin(), values.end());
  std::vector<double> p(values.size());
  double total = 0.0;
  for (size_t i = 0; i < values.size(); ++i) total += p[i] = std::exp(static_cast<double>(values[i]) - max_value);
  size_t winner = 0;
  double entropy = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] /= total;
    if (p[i] > p[winner]) winner = i;
    if (p[i] > 0.0) entropy -= p[i] * std::log(p[i]);
  }
  result.index = static_cast<uint16_t>(winner);
  result.confidence = static_cast<float>(p[winner]);
  result.entropy = static_cast<float>(entropy);
}

std::string Session::generate_probe_text(std::span<const int32_t> tokens, int decode_tokens) {
  Logits logits;
  context_.append(tokens, LogitsWanted::Last, logits);
  std::vector<int32_t> masked;
  turn_mask(masked);
  // The settings as they stand (an OP_SET_CONFIG applies from its own frame on, not from the
  // next turn) without the penalties, drawing from a copy of the session's generator: the probe
  // leaves the generator as it was, so the turns after it are the turns without it (the
  // original's probes advance it).
  const SamplerOptions& live = config_.sampler;
  Sampler sampler(SamplerOptions{.temperature = live.temperature, .top_k = live.top_k, .top_p = live.top_p,
                                 .min_p = live.min_p});
  sampler.set_generator(sampler_.generator());
  std::string text;
  for (int i = 0; i < decode_tokens; ++i) {
    const int32_t token = sampler.sample(logits.row(0), masked);
    if (token == special_.turn_close || token == special_.channel_open || token == special_.channel_close ||
        token == special_.newline || token == special_.paragraph || token == special_.eos) {
      break;
    }
    const std::string& piece = tokenizer_.token_text(token);
    if (text.size() + piece.size() > kMaxProbeTextBytes) break;
    text += piece;
    if (i + 1 == decode_tokens) break;
    context_.append(std::span<const int32_t>(&token, 1), LogitsWanted::Last, logits);
  }
  const std::string_view trimmed = trim(text, " \t\r\n\"'");
  return std::string(trim(trimmed.substr(0, trimmed.find('\n')), " \t\r\n\"'"));
}

}  // namespace channel
