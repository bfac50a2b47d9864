#include "kv/certificate_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace channel::kv {
namespace {

using nlohmann::ordered_json;

// The theorem cards the seed names for each section. Only ids that hold for any input are listed;
// the ids that pin the seed's public 16/31/4 fixture (AIM-T0089, AIM-T0105, AIM-T0118,
// AIM-T0149) are left out, since they say nothing about other inputs.
constexpr std::array kWindowTheorems{"AIM-T0069", "AIM-T0070", "AIM-T0076"};
constexpr std::array kBatchTheorems{"AIM-T0078", "AIM-T0079", "AIM-T0092", "AIM-T0095", "AIM-T0096"};
constexpr std::array kRequestTheorems{"AIM-T0086", "AIM-T0093", "AIM-T0097", "AIM-T0098",
                                      "AIM-T0100", "AIM-T0101", "AIM-T0102", "AIM-T0103"};
constexpr std::array kLiveWindowTheorems{"AIM-T0071", "AIM-T0072", "AIM-T0073", "AIM-T0074", "AIM-T0080",
                                         "AIM-T0081", "AIM-T0082", "AIM-T0083", "AIM-T0087", "AIM-T0088"};
constexpr std::array kSinkWindowTheorems{"AIM-T0104", "AIM-T0108", "AIM-T0109", "AIM-T0110", "AIM-T0117",
                                         "AIM-T0119", "AIM-T0136", "AIM-T0137", "AIM-T0148"};

ordered_json or_null(const std::optional<int64_t>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json geometry_json(const RetentionContract& contract) {
  return {
      {"anchors", contract.anchors()}, {"ring_first_slot", contract.anchors()}, {"ring_size", contract.cache_size()}};
}

ordered_json window_json(const Certificate& c) {
  const WindowCertificate& w = c.window;
  return {{"cache_size", c.contract.cache_size()},
          {"current", c.request.current},
          {"token", c.request.token},
          {"slot", w.slot},
          {"current_slot", w.current_slot},
          {"lag", w.lag},
          {"retained", w.retained},
          {"next_overwrite", or_null(w.next_overwrite)},
          {"non_future", w.non_future},
          {"anchor", w.anchor},
          {"overwrite_after_current", w.overwrite_after_current},
          {"stale_by_overwrite_boundary", w.stale},
          {"theorems", kWindowTheorems}};
}

ordered_json batch_json(const Certificate& c) {
  const BatchCertificate& b = c.batch;
  return {{"tokens", c.request.batch_tokens},
          {"slots", b.slots},
          {"all_retained", b.check.all_retained},
          {"slots_distinct", b.check.slots_distinct},
          {"all_non_future", b.check.all_non_future},
          {"tokens_distinct", b.check.tokens_distinct},
          {"theorems", kBatchTheorems}};
}

ordered_json request_json(const Certificate& c) {
  const BatchCertificate& b = c.batch;
  return {{"request_id", c.request.request_id},
          {"tokens", c.request.batch_tokens},
          {"pass", b.check.pass()},
          {"stale_requested_count", b.check.stale_count},
          {"first_stale_token", or_null(b.check.first_stale_token)},
          {"first_stale_next_overwrite", or_null(b.first_stale_next_overwrite)},
          {"theorems", kRequestTheorems}};
}

ordered_json live_window_json(const LiveWindowCertificate& l) {
  return {{"tokens", l.tokens},
          {"slots", l.slots},
          {"full", l.window.full},
          {"slot_count_matches_full_window", l.slot_count_matches_full_window},
          {"slot_range_covered", l.slot_range_covered},
          {"full_coverage_contract", l.full_coverage_contract},
          {"start", l.window.clocks.start},
          {"length", l.window.clocks.length},
          {"slots_distinct", l.slots_distinct},
          {"exact_live_window_request_pass", l.exact_request_passes},
          {"theorems", kLiveWindowTheorems}};
}

ordered_json sink_window_json(const SinkWindowCertificate& s) {
  return {{"sink_size", s.sink_size},
          {"sink_tokens", s.sink_tokens},
          {"rolling_tokens", s.rolling_tokens},
          {"tokens", s.tokens},
          {"token_count", s.token_count},
          {"token_count_bound", s.token_count_bound},
          {"sink_prefix_disjoint_from_live_window", s.sink_prefix_disjoint_from_live_window},
          {"sink_tokens_outside_ordinary_rolling_window", s.sink_tokens_outside_ordinary_rolling_window},
          {"token_count_le_sink_plus_cache", s.token_count_le_sink_plus_cache},
          {"tokens_distinct", s.tokens_distinct},
          {"sink_tokens_non_future", s.sink_tokens_non_future},
          {"theorems", kSinkWindowTheorems}};
}

// Text: one "name = value" line per field, names padded to line up, as in the seed.
class TextSection {
 public:
  explicit TextSection(std::string heading) : heading_(std::move(heading)) {}

  TextSection& add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  TextSection& add(std::string name, bool value) { return add(std::move(name), std::string(value ? "true" : "false")); }
  TextSection& add(std::string name, int64_t value) { return add(std::move(name), std::to_string(value)); }

  std::string render() const {
    size_t width = 0;
    for (const auto& field : fields_) width = std::max(width, field.first.size());
    std::string out = heading_ + "\n";
    for (const auto& [name, value] : fields_) out += fmt::format("  {:<{}} = {}\n", name, width, value);
    return out;
  }

 private:
  std::string heading_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

// "16..31" for a run of consecutive clocks or slots, so that a 3968-slot window stays one line;
// runs shorter than three are listed ("4, 8, 13, 15").
std::string list_text(const std::vector<int64_t>& values) {
  if (values.empty()) return "none";
  std::vector<std::string> parts;
  for (size_t begin = 0; begin < values.size();) {
    size_t end = begin + 1;
    while (end < values.size() && values[end] == values[end - 1] + 1) ++end;
    if (end - begin >= 3) {
      parts.push_back(fmt::format("{}..{}", values[begin], values[end - 1]));
    } else {
      for (size_t i = begin; i < end; ++i) parts.push_back(std::to_string(values[i]));
    }
    begin = end;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

template <size_t N>
std::string theorems_text(const std::array<const char*, N>& ids) {
  return fmt::format("{}", fmt::join(ids, ", "));
}

std::string geometry_text(const RetentionContract& contract) {
  const int64_t ring_first = contract.anchors();
  const int64_t ring_last = ring_first + contract.cache_size() - 1;
  if (contract.anchors() == 0) return fmt::format("plain ring of {} slots (0..{})", contract.cache_size(), ring_last);
  return fmt::format("channel: {} anchors in slots 0..{} (never overwritten), ring of {} slots {}..{}",
                     contract.anchors(), contract.anchors() - 1, contract.cache_size(), ring_first, ring_last);
}

std::string window_status(const WindowCertificate& w) {
  if (!w.non_future) return "FUTURE";
  return w.retained ? "LIVE" : "STALE";
}

std::string window_text(const Certificate& c) {
  const WindowCertificate& w = c.window;
  TextSection section(
      fmt::format("window: token {} is {} at current {}", c.request.token, window_status(w), c.request.current));
  section.add("cache_size", c.contract.cache_size())
      .add("current", c.request.current)
      .add("token", c.request.token)
      .add("slot", w.slot)
      .add("current slot", w.current_slot)
      .add("lag", w.lag);
  if (c.contract.anchors() > 0) section.add("anchor", w.anchor);
  section.add("non-future", w.non_future)
      .add("retained", w.retained)
      .add("next overwrite", w.next_overwrite ? std::to_string(*w.next_overwrite) : "never (anchor)")
      .add("overwrite after current", w.overwrite_after_current)
      .add("stale by overwrite boundary", w.stale)
      .add("theorems", theorems_text(kWindowTheorems));
  return section.render();
}

std::string batch_text(const Certificate& c) {
  const BatchCertificate& b = c.batch;
  TextSection section("batch");
  section.add("tokens", list_text(c.request.batch_tokens))
      .add("slots", list_text(b.slots))
      .add("all non-future", b.check.all_non_future)
      .add("tokens distinct", b.check.tokens_distinct)
      .add("all retained", b.check.all_retained)
      .add("slots distinct", b.check.slots_distinct)
      .add("theorems", theorems_text(kBatchTheorems));
  return section.render();
}

std::string request_text(const Certificate& c) {
  const BatchCertificate& b = c.batch;
  const std::string first_stale = b.check.first_stale_token
                                      ? fmt::format("{} (next overwrite {} <= current {})", *b.check.first_stale_token,
                                                    *b.first_stale_next_overwrite, c.request.current)
                                      : "none";
  TextSection section(fmt::format("request {}: {}", c.request.request_id, b.check.pass() ? "PASS" : "FAIL"));
  section.add("tokens", list_text(c.request.batch_tokens))
      .add("pass", b.check.pass())
      .add("stale requested count", b.check.stale_count)
      .add("first stale token", first_stale)
      .add("theorems", theorems_text(kRequestTheorems));
  return section.render();
}

std::string live_window_text(const LiveWindowCertificate& l) {
  TextSection section(fmt::format("live window: {}", l.window.full ? "FULL" : "FILLING"));
  section.add("tokens", list_text(l.tokens))
      .add("slots", list_text(l.slots))
      .add("length", l.window.clocks.length)
      .add("full", l.window.full)
      .add("slots distinct", l.slots_distinct)
      .add("slot count matches full window", l.slot_count_matches_full_window)
      .add("slot range covered", l.slot_range_covered)
      .add("full coverage contract", l.full_coverage_contract)
      .add("exact live window request pass", l.exact_request_passes)
      .add("theorems", theorems_text(kLiveWindowTheorems));
  return section.render();
}

std::string sink_window_text(const SinkWindowCertificate& s) {
  TextSection section(fmt::format("sink window: sink size {}", s.sink_size));
  section.add("sink tokens", list_text(s.sink_tokens))
      .add("rolling tokens", list_text(s.rolling_tokens))
      .add("tokens", list_text(s.tokens))
      .add("token count", s.token_count)
      .add("token count bound", s.token_count_bound)
      .add("token count <= sink + cache", s.token_count_le_sink_plus_cache)
      .add("tokens distinct", s.tokens_distinct)
      .add("sink tokens non-future", s.sink_tokens_non_future)
      .add("sink prefix disjoint from live window", s.sink_prefix_disjoint_from_live_window)
      .add("sink tokens outside ordinary rolling window", s.sink_tokens_outside_ordinary_rolling_window)
      .add("theorems", theorems_text(kSinkWindowTheorems));
  return section.render();
}

}  // namespace

ordered_json certificate_json(const Certificate& c) {
  ordered_json out = {{"geometry", geometry_json(c.contract)},
                      {"window", window_json(c)},
                      {"batch", batch_json(c)},
                      {"request", request_json(c)},
                      {"live_window", live_window_json(c.live_window)}};
  if (c.sink_window) out["sink_window"] = sink_window_json(*c.sink_window);
  return out;
}

std::string certificate_text(const Certificate& c) {
  std::string out = fmt::format("KV-cache retention certificate (seed 002)\ngeometry: {}\n", geometry_text(c.contract));
  std::vector<std::string> sections = {window_text(c), batch_text(c), request_text(c), live_window_text(c.live_window)};
  if (c.sink_window) sections.push_back(sink_window_text(*c.sink_window));
  for (const std::string& section : sections) {
    out += '\n';  // a blank line between sections
    out += section;
  }
  return out;
}

}  // namespace channel::kv
