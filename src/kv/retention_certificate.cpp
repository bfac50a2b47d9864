#include "kv/retention_certificate.h"

#include <algorithm>

#include "core/error.h"

namespace channel::kv {
namespace {

std::vector<int64_t> list_clocks(ClockRange range) {
  std::vector<int64_t> clocks(static_cast<size_t>(range.length));
  for (int64_t i = 0; i < range.length; ++i) clocks[static_cast<size_t>(i)] = range.start + i;
  return clocks;
}

std::vector<int64_t> slots_of(const RetentionContract& contract, const std::vector<int64_t>& clocks) {
  std::vector<int64_t> slots;
  slots.reserve(clocks.size());
  for (const int64_t clock : clocks) slots.push_back(contract.slot(clock));
  return slots;
}

// Whether the slot list holds every ring slot (anchors .. anchors + cache_size - 1), checked slot
// by slot rather than inferred from the count, so the coverage fields test the contract.
bool covers_ring(const RetentionContract& contract, const std::vector<int64_t>& slots) {
  // Fewer slots than the ring has cannot cover it (and the ring may be too large to enumerate).
  if (static_cast<int64_t>(slots.size()) < contract.cache_size()) return false;
  std::vector<bool> seen(static_cast<size_t>(contract.cache_size()), false);
  for (const int64_t slot : slots) {
    const int64_t index = slot - contract.anchors();
    if (index >= 0 && index < contract.cache_size()) seen[static_cast<size_t>(index)] = true;
  }
  return std::all_of(seen.begin(), seen.end(), [](bool s) { return s; });
}

bool in_ring_slots(const RetentionContract& contract, int64_t slot) {
  return slot >= contract.anchors() && slot - contract.anchors() < contract.cache_size();
}

WindowCertificate certify_window(const RetentionContract& contract, int64_t current, int64_t token) {
  WindowCertificate w;
  w.slot = contract.slot(token);
  w.current_slot = contract.slot(current);
  w.lag = current - token;
  w.anchor = contract.is_anchor(token);
  w.non_future = token <= current;
  w.retained = contract.retained(current, token);
  w.stale = contract.stale(current, token);
  w.next_overwrite = contract.next_overwrite(token);
  w.overwrite_after_current = !w.next_overwrite || *w.next_overwrite > current;
  return w;
}

BatchCertificate certify_batch(const RetentionContract& contract, int64_t current, const std::vector<int64_t>& tokens) {
  BatchCertificate b;
  b.slots = slots_of(contract, tokens);
  b.check = contract.check_request(current, tokens);
  if (b.check.first_stale_token) b.first_stale_next_overwrite = contract.next_overwrite(*b.check.first_stale_token);
  return b;
}

LiveWindowCertificate certify_live_window(const RetentionContract& contract, const LiveWindow& window,
                                          int64_t current) {
  LiveWindowCertificate l;
  l.window = window;
  l.tokens = list_clocks(window.clocks);
  l.slots = slots_of(contract, l.tokens);
  // The live window read as a request also yields its slot distinctness.
  const RequestCheck as_request = contract.check_request(current, l.tokens);
  l.slots_distinct = as_request.slots_distinct;
  l.exact_request_passes = as_request.pass();
  const bool count_is_cache_size = static_cast<int64_t>(l.slots.size()) == contract.cache_size();
  l.slot_count_matches_full_window = count_is_cache_size == window.full;
  l.slot_range_covered = covers_ring(contract, l.slots);
  const bool all_in_range =
      std::all_of(l.slots.begin(), l.slots.end(), [&](int64_t slot) { return in_ring_slots(contract, slot); });
  l.full_coverage_contract = window.full && l.slots_distinct && count_is_cache_size && all_in_range;
  return l;
}

SinkWindowCertificate certify_sink_window(const RetentionContract& contract, const SinkWindow& window,
                                          const LiveWindow& live, int64_t current, int64_t sink_size) {
  if (sink_size > kMaxClock - contract.cache_size()) {
    fail("sink size {} + cache size {} is past the largest clock {}", sink_size, contract.cache_size(), kMaxClock);
  }
  SinkWindowCertificate s;
  s.sink_size = sink_size;
  s.sink_tokens = list_clocks(window.sink);
  s.rolling_tokens = list_clocks(window.rolling);
  s.tokens = s.sink_tokens;
  s.tokens.insert(s.tokens.end(), s.rolling_tokens.begin(), s.rolling_tokens.end());
  s.token_count = static_cast<int64_t>(s.tokens.size());
  s.token_count_bound = sink_size + contract.cache_size();
  s.token_count_le_sink_plus_cache = s.token_count <= s.token_count_bound;
  s.tokens_distinct = contract.check_request(current, s.tokens).tokens_distinct;
  s.sink_tokens_non_future =
      std::all_of(s.sink_tokens.begin(), s.sink_tokens.end(), [&](int64_t t) { return t <= current; });
  s.sink_prefix_disjoint_from_live_window = window.sink.start + window.sink.length <= live.clocks.start;
  s.sink_tokens_outside_ordinary_rolling_window = std::none_of(
      s.sink_tokens.begin(), s.sink_tokens.end(), [&](int64_t t) { return contract.retained(current, t); });
  return s;
}

}  // namespace

Certificate certify(const RetentionContract& contract, const CertifyRequest& request) {
  const int64_t current = request.current;
  const LiveWindow live = contract.live_window(current);
  const std::optional<SinkWindow> sink =
      request.sink_size ? std::optional(contract.sink_window(current, *request.sink_size)) : std::nullopt;
  // Compared one at a time: the sum of two unchecked lengths could pass 64 bits.
  const int64_t sink_length = sink ? sink->sink.length : 0;
  if (live.clocks.length > kMaxListedTokens || sink_length > kMaxListedTokens - live.clocks.length) {
    fail(
        "the certificate would list a live window of {} and a sink prefix of {} tokens, more than the {} it lists "
        "at most (choose a smaller cache or sink size)",
        live.clocks.length, sink_length, kMaxListedTokens);
  }
  Certificate c{contract,
                request,
                certify_window(contract, current, request.token),
                certify_batch(contract, current, request.batch_tokens),
                certify_live_window(contract, live, current),
                std::nullopt};
  if (sink) c.sink_window = certify_sink_window(contract, *sink, live, current, *request.sink_size);
  return c;
}

}  // namespace channel::kv
