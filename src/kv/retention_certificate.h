// A retention certificate (seed 002): every field `channel kv certify` reports for one read point,
// computed from the RetentionContract. Contract failures (stale, future or duplicate tokens) are
// fields of the certificate, not errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/retention_contract.h"

namespace channel::kv {

// A certificate lists every token of its windows; certify refuses to list more than this many.
inline constexpr int64_t kMaxListedTokens = int64_t{1} << 20;

struct CertifyRequest {
  int64_t current = 0;                // the read point
  int64_t token = 0;                  // the single inspected token
  std::vector<int64_t> batch_tokens;  // the read batch, also certified as a named request
  std::optional<int64_t> sink_size;   // adds the sink-window section when set
  std::string request_id = "default_read_request";
};

// The inspected token.
struct WindowCertificate {
  int64_t slot = 0;
  int64_t current_slot = 0;
  int64_t lag = 0;  // current - token: negative for a future token
  bool anchor = false;
  bool non_future = false;
  bool retained = false;
  bool stale = false;                     // non-future and next overwrite <= current
  std::optional<int64_t> next_overwrite;  // nullopt for an anchor (never overwritten)
  bool overwrite_after_current = false;   // no next overwrite, or it comes after current
};

// The read batch: its slots and the request check (the seed's retained batch and adapter request).
struct BatchCertificate {
  std::vector<int64_t> slots;
  RequestCheck check;
  std::optional<int64_t> first_stale_next_overwrite;  // the overwrite that made the first stale token stale
};

// The generated live window and the seed's full-coverage fields, checked on the listed slots.
struct LiveWindowCertificate {
  LiveWindow window;
  std::vector<int64_t> tokens;
  std::vector<int64_t> slots;
  bool slots_distinct = false;
  bool slot_count_matches_full_window = false;  // (slot count == cache_size) == full
  bool slot_range_covered = false;              // every ring slot appears
  bool full_coverage_contract = false;          // distinct, cache_size of them, all ring slots
  bool exact_request_passes = false;            // the window itself, read as a request, passes
};

struct SinkWindowCertificate {
  int64_t sink_size = 0;
  std::vector<int64_t> sink_tokens;
  std::vector<int64_t> rolling_tokens;
  std::vector<int64_t> tokens;  // sink tokens followed by the rolling tokens
  int64_t token_count = 0;
  int64_t token_count_bound = 0;  // sink_size + cache_size
  bool token_count_le_sink_plus_cache = false;
  bool tokens_distinct = false;
  bool sink_tokens_non_future = false;
  bool sink_prefix_disjoint_from_live_window = false;        // the pinned prefix ends before the live window
  bool sink_tokens_outside_ordinary_rolling_window = false;  // no sink token is retained by the ring alone
};

struct Certificate {
  RetentionContract contract;
  CertifyRequest request;
  WindowCertificate window;
  BatchCertificate batch;
  LiveWindowCertificate live_window;
  std::optional<SinkWindowCertificate> sink_window;
};

// Throws channel::Error when an input is outside the contract's domain (negative or too-large
// clocks, a negative sink size, a next overwrite past kMaxClock, windows longer than
// kMaxListedTokens); every other outcome is reported in the certificate.
Certificate certify(const RetentionContract& contract, const CertifyRequest& request);

}  // namespace channel::kv
