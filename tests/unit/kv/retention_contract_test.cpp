// The retention contract and its certificate: the seed's worked examples field by field (expected
// values from the seed's text), properties against brute-force ring simulations, and nonsense
// inputs.
#include "kv/retention_contract.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "kv/certificate_format.h"
#include "kv/retention_certificate.h"

namespace channel::kv {
namespace {

using Clocks = std::vector<int64_t>;

Clocks range(int64_t first, int64_t last) {
  Clocks out;
  for (int64_t c = first; c <= last; ++c) out.push_back(c);
  return out;
}

Clocks concat(Clocks a, const Clocks& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The seed's public fixture: cache_size 16, current 31, token 20, batch 20,24,29,31.
CertifyRequest seed_request() {
  CertifyRequest r;
  r.current = 31;
  r.token = 20;
  r.batch_tokens = {20, 24, 29, 31};
  return r;
}

// ---- The seed's worked examples -------------------------------------------------------------

TEST(RetentionContractSeed, SingleTokenWindow) {
  const Certificate c = certify(RetentionContract(16), seed_request());
  EXPECT_EQ(c.contract.cache_size(), 16);
  EXPECT_EQ(c.window.slot, 4);
  EXPECT_EQ(c.window.current_slot, 15);
  EXPECT_EQ(c.window.lag, 11);
  EXPECT_TRUE(c.window.retained);
  EXPECT_EQ(c.window.next_overwrite, 36);
  EXPECT_TRUE(c.window.overwrite_after_current);
  EXPECT_FALSE(c.window.stale);  // "stale by overwrite boundary = false"
  EXPECT_TRUE(c.window.non_future);
  EXPECT_FALSE(c.window.anchor);
}

TEST(RetentionContractSeed, RetainedBatchPasses) {
  const Certificate c = certify(RetentionContract(16), seed_request());
  EXPECT_EQ(c.batch.slots, (Clocks{4, 8, 13, 15}));
  EXPECT_TRUE(c.batch.check.all_retained);
  EXPECT_TRUE(c.batch.check.slots_distinct);
  EXPECT_TRUE(c.batch.check.tokens_distinct);
  EXPECT_TRUE(c.batch.check.all_non_future);
  EXPECT_TRUE(c.batch.check.pass());
  EXPECT_EQ(c.batch.check.stale_count, 0);
  EXPECT_EQ(c.batch.check.first_stale_token, std::nullopt);
  EXPECT_EQ(c.request.request_id, "default_read_request");
}

TEST(RetentionContractSeed, StaleRequestFailsOnToken12) {
  CertifyRequest r = seed_request();
  r.batch_tokens = {12, 20};
  r.request_id = "stale_read";
  const Certificate c = certify(RetentionContract(16), r);
  EXPECT_FALSE(c.batch.check.pass());
  EXPECT_EQ(c.batch.check.stale_count, 1);
  EXPECT_EQ(c.batch.check.first_stale_token, 12);
  EXPECT_EQ(c.batch.first_stale_next_overwrite, 28);  // "same-slot overwrite 28 <= 31"
  EXPECT_FALSE(c.batch.check.all_retained);
  EXPECT_TRUE(c.batch.check.all_non_future);
  EXPECT_TRUE(c.batch.check.tokens_distinct);
  // 12 and 20 share no slot (12 and 4): the failure is freshness, not a collision.
  EXPECT_EQ(c.batch.slots, (Clocks{12, 4}));
}

TEST(RetentionContractSeed, LiveWindowIsFull16To31) {
  const Certificate c = certify(RetentionContract(16), seed_request());
  const LiveWindowCertificate& l = c.live_window;
  EXPECT_EQ(l.window.clocks.start, 16);
  EXPECT_EQ(l.window.clocks.length, 16);
  EXPECT_EQ(l.tokens, range(16, 31));
  EXPECT_EQ(l.slots, range(0, 15));
  EXPECT_TRUE(l.window.full);
  EXPECT_TRUE(l.slots_distinct);
  EXPECT_TRUE(l.slot_count_matches_full_window);
  EXPECT_TRUE(l.slot_range_covered);
  EXPECT_TRUE(l.full_coverage_contract);
  EXPECT_TRUE(l.exact_request_passes);
}

TEST(RetentionContractSeed, SinkWindowOfFour) {
  CertifyRequest r = seed_request();
  r.sink_size = 4;
  const Certificate c = certify(RetentionContract(16), r);
  ASSERT_TRUE(c.sink_window);
  const SinkWindowCertificate& s = *c.sink_window;
  EXPECT_EQ(s.sink_size, 4);
  EXPECT_EQ(s.sink_tokens, (Clocks{0, 1, 2, 3}));
  EXPECT_EQ(s.rolling_tokens, range(16, 31));
  EXPECT_EQ(s.tokens, concat({0, 1, 2, 3}, range(16, 31)));
  EXPECT_EQ(s.token_count, 20);
  EXPECT_EQ(s.token_count_bound, 20);
  EXPECT_TRUE(s.token_count_le_sink_plus_cache);
  EXPECT_TRUE(s.tokens_distinct);
  EXPECT_TRUE(s.sink_tokens_non_future);
  EXPECT_TRUE(s.sink_prefix_disjoint_from_live_window);
  EXPECT_TRUE(s.sink_tokens_outside_ordinary_rolling_window);
}

TEST(RetentionContractSeed, NoSinkSectionWithoutSinkSize) {
  EXPECT_FALSE(certify(RetentionContract(16), seed_request()).sink_window);
}

TEST(RetentionCertificateJson, SeedFixtureHasTheStableKeys) {
  CertifyRequest r = seed_request();
  r.sink_size = 4;
  const nlohmann::ordered_json j = certificate_json(certify(RetentionContract(16), r));
  const auto& w = j.at("window");
  EXPECT_EQ(w.at("cache_size"), 16);
  EXPECT_EQ(w.at("current"), 31);
  EXPECT_EQ(w.at("token"), 20);
  EXPECT_EQ(w.at("slot"), 4);
  EXPECT_EQ(w.at("current_slot"), 15);
  EXPECT_EQ(w.at("lag"), 11);
  EXPECT_EQ(w.at("retained"), true);
  EXPECT_EQ(w.at("next_overwrite"), 36);
  const auto& b = j.at("batch");
  EXPECT_EQ(b.at("tokens"), Clocks({20, 24, 29, 31}));
  EXPECT_EQ(b.at("slots"), Clocks({4, 8, 13, 15}));
  EXPECT_EQ(b.at("all_retained"), true);
  EXPECT_EQ(b.at("slots_distinct"), true);
  const auto& q = j.at("request");
  EXPECT_EQ(q.at("request_id"), "default_read_request");
  EXPECT_EQ(q.at("tokens"), Clocks({20, 24, 29, 31}));
  EXPECT_EQ(q.at("pass"), true);
  EXPECT_EQ(q.at("stale_requested_count"), 0);
  EXPECT_TRUE(q.at("first_stale_token").is_null());
  const auto& l = j.at("live_window");
  EXPECT_EQ(l.at("tokens"), range(16, 31));
  EXPECT_EQ(l.at("slots"), range(0, 15));
  for (const char* key : {"full", "slot_count_matches_full_window", "slot_range_covered", "full_coverage_contract"}) {
    EXPECT_EQ(l.at(key), true) << key;
  }
  const auto& s = j.at("sink_window");
  EXPECT_EQ(s.at("sink_size"), 4);
  EXPECT_EQ(s.at("sink_tokens"), Clocks({0, 1, 2, 3}));
  EXPECT_EQ(s.at("rolling_tokens"), range(16, 31));
  EXPECT_EQ(s.at("tokens"), concat({0, 1, 2, 3}, range(16, 31)));
  EXPECT_EQ(s.at("token_count"), 20);
  EXPECT_EQ(s.at("token_count_bound"), 20);
  EXPECT_EQ(s.at("sink_prefix_disjoint_from_live_window"), true);
  EXPECT_EQ(s.at("sink_tokens_outside_ordinary_rolling_window"), true);
  // The seed ties these theorem cards to these sections.
  EXPECT_NE(std::find(w.at("theorems").begin(), w.at("theorems").end(), "AIM-T0069"), w.at("theorems").end());
  EXPECT_NE(std::find(q.at("theorems").begin(), q.at("theorems").end(), "AIM-T0103"), q.at("theorems").end());
  EXPECT_NE(std::find(s.at("theorems").begin(), s.at("theorems").end(), "AIM-T0104"), s.at("theorems").end());
}

TEST(RetentionCertificateJson, StaleRequestNamesTheFirstStaleToken) {
  CertifyRequest r = seed_request();
  r.batch_tokens = {12, 20};
  const nlohmann::ordered_json q = certificate_json(certify(RetentionContract(16), r)).at("request");
  EXPECT_EQ(q.at("pass"), false);
  EXPECT_EQ(q.at("stale_requested_count"), 1);
  EXPECT_EQ(q.at("first_stale_token"), 12);
  EXPECT_EQ(q.at("first_stale_next_overwrite"), 28);
}

TEST(RetentionCertificateText, ReadsLikeTheSeedCertificate) {
  CertifyRequest r = seed_request();
  r.sink_size = 4;
  const std::string text = certificate_text(certify(RetentionContract(16), r));
  for (const char* line :
       {"window: token 20 is LIVE at current 31", "next overwrite              = 36",
        "current slot                = 15", "slots           = 4, 8, 13, 15", "request default_read_request: PASS",
        "first stale token     = none", "live window: FULL", "tokens                         = 16..31",
        "sink tokens                                 = 0..3",
        "tokens                                      = 0..3, 16..31"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
}

// ---- Properties against brute-force simulations ---------------------------------------------

// A ring of `cache_size` slots after writing clocks 0..current into slot clock % cache_size:
// which clock each slot holds.
std::vector<int64_t> simulate_plain_ring(int64_t cache_size, int64_t current) {
  std::vector<int64_t> holder(static_cast<size_t>(cache_size), -1);
  for (int64_t t = 0; t <= current; ++t) holder[static_cast<size_t>(t % cache_size)] = t;
  return holder;
}

bool in_range(const ClockRange& r, int64_t clock) { return clock >= r.start && clock < r.start + r.length; }

TEST(RetentionContractProperty, RetainedMatchesASimulatedRing) {
  std::mt19937_64 rng(2002);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t cache_size = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    const int64_t current = std::uniform_int_distribution<int64_t>(0, 130)(rng);
    const RetentionContract contract(cache_size);
    const std::vector<int64_t> holder = simulate_plain_ring(cache_size, current);
    const LiveWindow live = contract.live_window(current);
    std::set<int64_t> live_slots;
    for (int64_t t = 0; t <= current + cache_size + 3; ++t) {
      const bool simulated = t <= current && holder[static_cast<size_t>(t % cache_size)] == t;
      ASSERT_EQ(contract.retained(current, t), simulated)
          << "cache " << cache_size << " current " << current << " t " << t;
      ASSERT_EQ(in_range(live.clocks, t), simulated) << "live window membership, t " << t;
      ASSERT_EQ(contract.stale(current, t), t <= current && !simulated);
      ASSERT_EQ(contract.slot(t), t % cache_size);
      ASSERT_EQ(contract.next_overwrite(t), t + cache_size);
      if (simulated) live_slots.insert(contract.slot(t));
    }
    // Live slots are distinct (one per live token) and cover every slot exactly when full.
    EXPECT_EQ(static_cast<int64_t>(live_slots.size()), live.clocks.length);
    EXPECT_EQ(live.full, current + 1 >= cache_size);
    EXPECT_EQ(static_cast<int64_t>(live_slots.size()) == cache_size, live.full);

    CertifyRequest r;
    r.current = current;
    const LiveWindowCertificate l = certify(contract, r).live_window;
    EXPECT_TRUE(l.slots_distinct);
    EXPECT_TRUE(l.slot_count_matches_full_window);
    EXPECT_EQ(l.slot_range_covered, live.full);
    EXPECT_EQ(l.full_coverage_contract, live.full);
    EXPECT_TRUE(l.exact_request_passes);
  }
}

TEST(RetentionContractProperty, RequestsMatchASimulatedRing) {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t cache_size = std::uniform_int_distribution<int64_t>(1, 24)(rng);
    const int64_t current = std::uniform_int_distribution<int64_t>(0, 80)(rng);
    const RetentionContract contract(cache_size);
    const std::vector<int64_t> holder = simulate_plain_ring(cache_size, current);
    Clocks request(std::uniform_int_distribution<size_t>(0, 6)(rng));
    for (int64_t& t : request) t = std::uniform_int_distribution<int64_t>(0, current + 4)(rng);

    bool non_future = true, all_live = true;
    int64_t stale = 0;
    std::optional<int64_t> first_stale;
    for (const int64_t t : request) {
      const bool live = t <= current && holder[static_cast<size_t>(t % cache_size)] == t;
      non_future = non_future && t <= current;
      all_live = all_live && live;
      if (t <= current && !live) {
        ++stale;
        if (!first_stale) first_stale = t;
      }
    }
    const bool distinct = std::set<int64_t>(request.begin(), request.end()).size() == request.size();
    const RequestCheck check = contract.check_request(current, request);
    EXPECT_EQ(check.all_non_future, non_future);
    EXPECT_EQ(check.tokens_distinct, distinct);
    EXPECT_EQ(check.all_retained, all_live);
    EXPECT_EQ(check.stale_count, stale);
    EXPECT_EQ(check.first_stale_token, first_stale);
    EXPECT_EQ(check.pass(), non_future && distinct && all_live);
    // Distinct live tokens sit in distinct slots.
    if (check.pass()) {
      EXPECT_TRUE(check.slots_distinct);
    }
  }
}

TEST(RetentionContractProperty, SinkWindowMembershipAndCount) {
  std::mt19937_64 rng(104);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t cache_size = std::uniform_int_distribution<int64_t>(1, 30)(rng);
    const int64_t current = std::uniform_int_distribution<int64_t>(0, 90)(rng);
    const int64_t sink_size = std::uniform_int_distribution<int64_t>(0, 12)(rng);
    const RetentionContract contract(cache_size);
    CertifyRequest r;
    r.current = current;
    r.sink_size = sink_size;
    const SinkWindowCertificate s = *certify(contract, r).sink_window;
    // The seed's membership bridge: in the list exactly when a seen sink token or retained.
    const std::set<int64_t> members(s.tokens.begin(), s.tokens.end());
    for (int64_t t = 0; t <= current + 2; ++t) {
      const bool expected = (t < sink_size && t <= current) || contract.retained(current, t);
      ASSERT_EQ(members.count(t) == 1, expected) << "cache " << cache_size << " current " << current << " t " << t;
    }
    EXPECT_TRUE(s.tokens_distinct);
    EXPECT_EQ(members.size(), s.tokens.size());
    EXPECT_LE(s.token_count, sink_size + cache_size);
    EXPECT_TRUE(s.token_count_le_sink_plus_cache);
    EXPECT_TRUE(s.sink_tokens_non_future);
    // Disjoint prefix implies sink tokens lie outside the ordinary window, and the exact count.
    if (s.sink_prefix_disjoint_from_live_window) {
      EXPECT_TRUE(s.sink_tokens_outside_ordinary_rolling_window);
      EXPECT_EQ(s.token_count,
                static_cast<int64_t>(s.sink_tokens.size()) + contract.live_window(current).clocks.length);
    }
  }
}

// Channel's 4096-slot layout simulated with a write pointer: anchors fill slots 0..N-1, then the
// pointer starts at N, advances one slot per token and jumps back to N when it reaches slot 3968.
TEST(RetentionContractProperty, ChannelGeometryMatchesASimulatedLayout) {
  for (const int64_t anchors :
       {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100}, int64_t{2000}, int64_t{kMaxAnchors}}) {
    const RetentionContract contract = RetentionContract::channel_geometry(anchors);
    const int64_t ring = 3968 - anchors;
    ASSERT_EQ(contract.cache_size(), ring);
    ASSERT_EQ(contract.anchors(), anchors);
    std::vector<int64_t> holder(4096, -1);  // clock held by each physical slot
    std::vector<int64_t> slot_of;           // simulated slot of each clock
    int64_t pointer = anchors;
    const int64_t last = anchors + 2 * ring + 37;
    const std::set<int64_t> checkpoints = {
        0, anchors, anchors + ring - 1, anchors + ring, anchors + ring + 1, anchors + 2 * ring, last, anchors / 2 + 3};
    for (int64_t clock = 0; clock <= last; ++clock) {
      int64_t slot = clock;
      if (clock >= anchors) {
        slot = pointer;
        if (++pointer == 3968) pointer = anchors;
      }
      slot_of.push_back(slot);
      holder[static_cast<size_t>(slot)] = clock;
      if (!checkpoints.count(clock)) continue;
      const int64_t current = clock;
      const LiveWindow live = contract.live_window(current);
      for (int64_t t = 0; t <= current + 2; ++t) {
        const bool simulated = t <= current && holder[static_cast<size_t>(slot_of[static_cast<size_t>(t)])] == t;
        ASSERT_EQ(contract.retained(current, t), simulated)
            << "anchors " << anchors << " current " << current << " t " << t;
        if (t <= current) {
          ASSERT_EQ(contract.slot(t), slot_of[static_cast<size_t>(t)]) << "t " << t;
        }
        // The ring's live window holds exactly the retained ring clocks; anchors stay outside it.
        ASSERT_EQ(in_range(live.clocks, t), simulated && t >= anchors) << "live, t " << t;
      }
      EXPECT_EQ(live.full, current - anchors + 1 >= ring);
      CertifyRequest r;
      r.current = current;
      const LiveWindowCertificate l = certify(contract, r).live_window;
      for (const int64_t s : l.slots) ASSERT_TRUE(s >= anchors && s < 3968) << s;
      EXPECT_TRUE(l.slots_distinct);
      EXPECT_EQ(l.slot_range_covered, live.full);
      EXPECT_EQ(l.full_coverage_contract, live.full);
    }
    // Anchors are never overwritten and nothing is written to Tier 3.
    for (int64_t a = 0; a < anchors; ++a) EXPECT_EQ(holder[static_cast<size_t>(a)], a);
    for (int64_t s = 3968; s < 4096; ++s) EXPECT_EQ(holder[static_cast<size_t>(s)], -1);
  }
}

TEST(RetentionContractChannel, IsThePlainContractOffsetByTheAnchors) {
  const int64_t anchors = 300;
  const RetentionContract channel = RetentionContract::channel_geometry(anchors);
  const RetentionContract plain(channel.cache_size());
  std::mt19937_64 rng(3968);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t current = anchors + std::uniform_int_distribution<int64_t>(0, 3 * plain.cache_size())(rng);
    const int64_t clock = anchors + std::uniform_int_distribution<int64_t>(0, 3 * plain.cache_size())(rng);
    ASSERT_EQ(channel.retained(current, clock), plain.retained(current - anchors, clock - anchors));
    ASSERT_EQ(channel.slot(clock), anchors + plain.slot(clock - anchors));
    ASSERT_EQ(channel.next_overwrite(clock), anchors + *plain.next_overwrite(clock - anchors));
    const LiveWindow a = channel.live_window(current);
    const LiveWindow b = plain.live_window(current - anchors);
    ASSERT_EQ(a.clocks.start, anchors + b.clocks.start);
    ASSERT_EQ(a.clocks.length, b.clocks.length);
    ASSERT_EQ(a.full, b.full);
  }
}

TEST(RetentionContractChannel, AnchorsAreRetainedOnceWrittenAndNeverOverwritten) {
  const RetentionContract contract = RetentionContract::channel_geometry(10);
  EXPECT_TRUE(contract.retained(1'000'000, 3));
  EXPECT_FALSE(contract.retained(2, 3));  // not written yet
  EXPECT_EQ(contract.next_overwrite(3), std::nullopt);
  EXPECT_EQ(contract.slot(3), 3);
  EXPECT_FALSE(contract.stale(1'000'000, 3));

  CertifyRequest r;
  r.current = 5000;
  r.token = 4;
  r.batch_tokens = {0, 9, 4999, 5000};
  const Certificate c = certify(contract, r);
  EXPECT_TRUE(c.window.anchor);
  EXPECT_TRUE(c.window.retained);
  EXPECT_TRUE(c.window.overwrite_after_current);
  EXPECT_TRUE(c.batch.check.pass());
  EXPECT_TRUE(c.batch.check.slots_distinct);
  EXPECT_TRUE(certificate_json(c).at("window").at("next_overwrite").is_null());
}

TEST(RetentionContractChannel, BeforeTheRingStartsTheLiveWindowIsEmpty) {
  const RetentionContract contract = RetentionContract::channel_geometry(50);
  CertifyRequest r;
  r.current = 20;
  r.token = 20;
  r.sink_size = 4;
  const Certificate c = certify(contract, r);
  EXPECT_EQ(c.live_window.window.clocks.length, 0);
  EXPECT_TRUE(c.live_window.tokens.empty());
  EXPECT_FALSE(c.live_window.window.full);
  EXPECT_FALSE(c.live_window.slot_range_covered);
  EXPECT_TRUE(c.sink_window->tokens.empty());
  EXPECT_TRUE(c.window.retained);  // token 20 is an anchor
}

// ---- Nonsense inputs --------------------------------------------------------------------------

TEST(RetentionContractNonsense, CacheSizeAndAnchorsOutOfRangeAreErrors) {
  EXPECT_THROW(RetentionContract(0), Error);
  EXPECT_THROW(RetentionContract(-16), Error);
  EXPECT_THROW(RetentionContract::channel_geometry(-1), Error);
  EXPECT_THROW(RetentionContract::channel_geometry(kMaxAnchors + 1), Error);
  EXPECT_THROW(RetentionContract::channel_geometry(4096), Error);
}

TEST(RetentionContractNonsense, NegativeClocksAreErrors) {
  const RetentionContract contract(16);
  EXPECT_THROW(contract.slot(-1), Error);
  EXPECT_THROW(contract.retained(-1, 0), Error);
  EXPECT_THROW(contract.retained(5, -1), Error);
  EXPECT_THROW(contract.stale(-1, 5), Error);
  EXPECT_THROW(contract.next_overwrite(-3), Error);
  EXPECT_THROW(contract.live_window(-1), Error);
  EXPECT_THROW(contract.sink_window(5, -1), Error);
  const Clocks negative{3, -4};
  EXPECT_THROW(contract.check_request(10, negative), Error);
  CertifyRequest r = seed_request();
  r.batch_tokens = {20, -1};
  EXPECT_THROW(certify(contract, r), Error);
}

TEST(RetentionContractNonsense, FutureTokensFailTheirFields) {
  CertifyRequest r = seed_request();
  r.token = 40;
  r.batch_tokens = {20, 40};
  const Certificate c = certify(RetentionContract(16), r);
  EXPECT_FALSE(c.window.non_future);
  EXPECT_FALSE(c.window.retained);
  EXPECT_FALSE(c.window.stale);  // not stale: it has not been written yet
  EXPECT_EQ(c.window.lag, -9);
  EXPECT_FALSE(c.batch.check.all_non_future);
  EXPECT_FALSE(c.batch.check.all_retained);
  EXPECT_FALSE(c.batch.check.pass());
  EXPECT_EQ(c.batch.check.stale_count, 0);
  EXPECT_EQ(c.batch.check.first_stale_token, std::nullopt);
  EXPECT_NE(certificate_text(c).find("window: token 40 is FUTURE at current 31"), std::string::npos);
}

TEST(RetentionContractNonsense, DuplicatesFailTheirFields) {
  CertifyRequest r = seed_request();
  r.batch_tokens = {20, 24, 20};
  const Certificate c = certify(RetentionContract(16), r);
  EXPECT_FALSE(c.batch.check.tokens_distinct);
  EXPECT_FALSE(c.batch.check.slots_distinct);
  EXPECT_TRUE(c.batch.check.all_retained);
  EXPECT_FALSE(c.batch.check.pass());
}

TEST(RetentionContractNonsense, EmptyRequestPassesVacuously) {
  CertifyRequest r = seed_request();
  r.batch_tokens.clear();
  const Certificate c = certify(RetentionContract(16), r);
  EXPECT_TRUE(c.batch.check.pass());
  EXPECT_EQ(c.batch.check.stale_count, 0);
  EXPECT_TRUE(c.batch.slots.empty());
}

TEST(RetentionContractNonsense, HugeClocksNeverOverflow) {
  const RetentionContract contract(16);
  EXPECT_TRUE(contract.retained(kMaxClock, kMaxClock - 15));
  EXPECT_FALSE(contract.retained(kMaxClock, kMaxClock - 16));
  EXPECT_TRUE(contract.stale(kMaxClock, 0));
  EXPECT_EQ(contract.next_overwrite(kMaxClock - 16), kMaxClock);
  EXPECT_THROW(contract.next_overwrite(kMaxClock - 15), Error);  // would pass the largest clock
  EXPECT_THROW(contract.slot(std::numeric_limits<int64_t>::max()), Error);
  const LiveWindow live = contract.live_window(kMaxClock);
  EXPECT_EQ(live.clocks.start, kMaxClock - 15);
  EXPECT_EQ(live.clocks.length, 16);
  const SinkWindow sink = contract.sink_window(kMaxClock, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(sink.sink.length, kMaxClock + 1);  // every clock seen so far is pinned
  EXPECT_EQ(sink.rolling.length, 0);

  // The largest cache: retained without computing token + cache_size.
  const RetentionContract huge(std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(huge.retained(kMaxClock, 0));
  EXPECT_THROW(huge.next_overwrite(1), Error);

  CertifyRequest r;
  r.current = kMaxClock;
  r.token = kMaxClock - 16;
  r.batch_tokens = {0, kMaxClock};
  const Certificate c = certify(contract, r);
  EXPECT_EQ(c.window.next_overwrite, kMaxClock);
  EXPECT_FALSE(c.window.retained);
  EXPECT_EQ(c.batch.check.first_stale_token, 0);
  EXPECT_EQ(c.batch.first_stale_next_overwrite, 16);
  EXPECT_EQ(c.live_window.tokens.back(), kMaxClock);
  r.token = kMaxClock - 3;  // retained, but its next overwrite is past the largest clock
  EXPECT_THROW(certify(contract, r), Error);
}

TEST(RetentionContractNonsense, CertificatesTooLargeToListAreErrors) {
  CertifyRequest r;
  r.current = int64_t{1} << 40;
  EXPECT_THROW(certify(RetentionContract(int64_t{1} << 40), r), Error);
  CertifyRequest sink = seed_request();
  sink.sink_size = std::numeric_limits<int64_t>::max();  // sink_size + cache_size has no clock
  EXPECT_THROW(certify(RetentionContract(16), sink), Error);
}

TEST(RetentionContractNonsense, CacheOfOneSlotKeepsOnlyTheCurrentToken) {
  const RetentionContract contract(1);
  for (int64_t t = 0; t <= 10; ++t) EXPECT_EQ(contract.retained(7, t), t == 7) << t;
  CertifyRequest r;
  r.current = 7;
  r.token = 7;
  const Certificate c = certify(contract, r);
  EXPECT_EQ(c.live_window.tokens, (Clocks{7}));
  EXPECT_TRUE(c.live_window.full_coverage_contract);
}

}  // namespace
}  // namespace channel::kv
