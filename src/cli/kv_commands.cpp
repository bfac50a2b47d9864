// `channel kv certify`: the KV-cache retention certificate (seed 002) for one read point, over the
// seed's plain ring or Channel's slot geometry.
#include <fmt/format.h>

#include <limits>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "kv/certificate_format.h"
#include "kv/retention_certificate.h"
#include "kv/retention_contract.h"

namespace channel::cli {
namespace {

struct CertifyCliOptions {
  int64_t cache_size = 0;
  int64_t anchors = 0;
  int64_t sink_size = 0;  // used only when --sink-size is given
  std::string geometry = "plain";
  std::string format = "text";
  kv::CertifyRequest request;
};

// --geometry plain needs --cache-size; --geometry channel implies it (W = 3968 - anchors), so a
// --cache-size given there must name the same ring rather than silently win or lose.
kv::RetentionContract contract_for(const CertifyCliOptions& o, bool cache_size_given, bool anchors_given) {
  if (o.geometry == "plain") {
    if (anchors_given) fail("--anchors applies to --geometry channel only");
    if (!cache_size_given) fail("--geometry plain needs --cache-size");
    return kv::RetentionContract(o.cache_size);
  }
  if (!anchors_given) fail("--geometry channel needs --anchors N (the Tier 1 system-prompt slots)");
  const kv::RetentionContract contract = kv::RetentionContract::channel_geometry(o.anchors);
  if (cache_size_given && o.cache_size != contract.cache_size()) {
    fail(
        "--cache-size {} disagrees with --geometry channel --anchors {}: that ring has {} - {} = {} slots "
        "(leave --cache-size out)",
        o.cache_size, o.anchors, kv::kRecallBase, o.anchors, contract.cache_size());
  }
  return contract;
}

}  // namespace

void register_kv_commands(CLI::App& app) {
  CLI::App* kv = app.add_subcommand("kv", "KV-cache tools");
  kv->require_subcommand(1);

  auto o = std::make_shared<CertifyCliOptions>();
  CLI::App* certify =
      kv->add_subcommand("certify", "Print the KV-cache retention certificate (seed 002) for one read point");
  certify->footer(
      "The certificate gives the slot, retention and next overwrite of --token; checks the --batch-tokens read as "
      "one request (it passes when every token is non-future, none repeats and none has been overwritten); lists "
      "the live window and, with --sink-size, the sink window. With --geometry channel, tokens are clocks of "
      "Channel's layout: the contract holds on the ring (clocks >= anchors), anchors are retained once written.\n"
      "Exit status: 0 whenever a certificate is printed, also when the request fails (read its pass field); "
      "non-zero with a message on stderr when an input is outside the contract (cache size 0, negative or too "
      "large clocks, contradicting geometry options).");
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  auto* cache_size = certify
                         ->add_option("--cache-size", o->cache_size,
                                      "ring slots; required with --geometry plain, implied by --geometry channel "
                                      "(3968 - anchors; if given it must match)")
                         ->check(CLI::Range(int64_t{1}, kMaxInt64));
  certify->add_option("--current", o->request.current, "the current token (read point), a clock >= 0")
      ->required()
      ->check(CLI::Range(int64_t{0}, kv::kMaxClock));
  certify->add_option("--token", o->request.token, "the token to inspect, a clock >= 0 (may be in the future)")
      ->required()
      ->check(CLI::Range(int64_t{0}, kv::kMaxClock));
  certify
      ->add_option("--batch-tokens", o->request.batch_tokens,
                   "comma-separated clocks read as one request, e.g. 20,24,29,31 (future, stale and duplicate "
                   "tokens are reported, not refused)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, kv::kMaxClock));
  auto* sink_size = certify
                        ->add_option("--sink-size", o->sink_size,
                                     "also certify the sink window: the first N ring tokens pinned before the "
                                     "rolling window")
                        ->check(CLI::Range(int64_t{0}, kMaxInt64));
  certify->add_option("--request-id", o->request.request_id, "name of the batch request")->capture_default_str();
  certify
      ->add_option("--geometry", o->geometry,
                   "plain: the seed's ring of --cache-size slots from clock 0; channel: Channel's 4096-slot layout, "
                   "--anchors Tier 1 slots (never overwritten) then a ring of 3968 - anchors slots")
      ->check(CLI::IsMember({"plain", "channel"}))
      ->capture_default_str();
  auto* anchors =
      certify->add_option("--anchors", o->anchors, "the Tier 1 anchor count N_sys; required with --geometry channel")
          ->check(CLI::Range(int64_t{0}, int64_t{kv::kMaxAnchors}));
  certify->add_option("--format", o->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  certify->callback([o, cache_size, sink_size, anchors] {
    const kv::RetentionContract contract = contract_for(*o, cache_size->count() > 0, anchors->count() > 0);
    kv::CertifyRequest request = o->request;
    if (sink_size->count() > 0) request.sink_size = o->sink_size;
    const kv::Certificate certificate = kv::certify(contract, request);
    if (o->format == "json") {
      fmt::print("{}\n", kv::certificate_json(certificate).dump(2));
    } else {
      fmt::print("{}", kv::certificate_text(certificate));
    }
  });
}

}  // namespace channel::cli
