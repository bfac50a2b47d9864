#include "benchmark/engine_benchmark.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <unistd.h>

#include "benchmark/read_bandwidth.h"
#include "core/error.h"
#include "core/split_mix.h"
#include "core/unit_length.h"
#include "core/thread_pool.h"
#include "engine/centroid_scan.h"
#include "engine/episode_format.h"
#include "engine/episode_scoring.h"
#include "engine/episode_stage.h"
#include "engine/session.h"
#include "engine/stream_context.h"
#include "kv/geometry.h"

namespace channel {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The stream a full-ring decode runs at: every ring slot written and the ring wrapped once.
constexpr int64_t kFullRingDepth = kv::kRecallBase + 64;
// The memory scan's store: issue 10's figure is the scan of 10,000 episodes.
constexpr uint32_t kMemoryScanEpisodes = 10'000;
// Evicts the memory scan's centroids from every cache the way a recall meets them after a decode
// burst: by streaming other data, here twice the last-level cache, through the scan's own threads
// (so each core's private caches are refilled too). clflush of the centroids was used first, but
// on the build machine it made a two-thread scan as slow as a one-thread scan (9.1 ms against
// 4.8 ms after this eviction; docs/benchmarks.md), a cost the scan does not meet in use.
class CacheEvictor {
 public:
  CacheEvictor() : words_(std::max(2 * last_level_cache_bytes(), kMinimumBytes) / sizeof(uint64_t)) {
    std::iota(words_.begin(), words_.end(), uint64_t{1});
  }
  void evict(ThreadPool& pool) {
    pool.parallel_for(
        static_cast<int64_t>(words_.size()),
        [&](int64_t begin, int64_t end) {
          const uint64_t sum = std::accumulate(words_.begin() + begin, words_.begin() + end, uint64_t{0});
          sink_.fetch_add(sum, std::memory_order_relaxed);  // keeps the reads
        },
        kWordsPerPage);
  }

 private:
  static constexpr size_t kMinimumBytes = size_t{256} << 20;  // where the cache size is unknown
  static constexpr int64_t kWordsPerPage = 4096 / sizeof(uint64_t);
  std::vector<uint64_t> words_;
  std::atomic<uint64_t> sink_{0};
};

// `width` normal values scaled to unit length, as centroids and queries are.
std::vector<float> unit_vector(SplitMix64& random, uint32_t width) {
  std::vector<float> v(width);
  for (float& x : v) x = random.normal();
  scale_to_unit_length(v);
  return v;
}

class RandomTokens {
 public:
  RandomTokens(int n_vocab, uint64_t seed) : n_vocab_(n_vocab), random_(seed) {}
  std::vector<int32_t> draw(size_t n) {
    std::vector<int32_t> tokens(n);
    for (int32_t& t : tokens) t = static_cast<int32_t>(random_.below(static_cast<size_t>(n_vocab_)));
    return tokens;
  }

 private:
  int n_vocab_;
  SplitMix64 random_;
};

int32_t argmax(const Logits& logits) {
  const auto row = logits.row(logits.n_rows - 1);
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Decodes `n` tokens one at a time, each the greedy choice after the last; returns tokens/s.
double decode_rate(StreamContext& stream, Logits& logits, int n) {
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    const int32_t next = argmax(logits);
    stream.append(std::span<const int32_t>(&next, 1), LogitsWanted::Last, logits);
  }
  return n / seconds_since(start);
}

// A session's events go nowhere: the benchmark times the calls themselves.
class DiscardEvents final : public SessionEvents {
 public:
  void token(int32_t, int64_t, std::string_view, bool) override {}
  void status(const StatusReport&) override {}
  void turn_complete(const TurnSummary&) override {}
  void tool_call(const ToolCall&) override {}
};

class Bench {
 public:
  Bench(std::shared_ptr<const Model> model, Backend& backend, const BenchmarkOptions& options,
        const BenchmarkProgress& progress)
      : model_(std::move(model)),
        backend_(backend),
        options_(options),
        progress_(progress),
        tokens_(model_->config().n_vocab, options.seed) {}

  BenchmarkResult run() {
    prefill();
    decode_at_depth_zero();
    if (options_.full_ring) decode_with_full_ring();
    session_figures();
    memory_figures();
    return result_;
  }

 private:
  // Repeats `measure` reps times after one warm-up run whose figure is dropped.
  template <typename Measure>
  Summary repeat(std::string_view what, Measure measure) {
    std::vector<double> samples;
    for (int rep = 0; rep <= options_.reps; ++rep) {
      const double value = measure();
      if (rep == 0) {
        progress_(fmt::format("{}: warm-up {:.2f}", what, value));
      } else {
        samples.push_back(value);
        progress_(fmt::format("{}: rep {}/{} {:.2f}", what, rep, options_.reps, value));
      }
    }
    return summarize(std::move(samples));
  }

  void prefill() {
    const std::vector<int32_t> prompt = tokens_.draw(static_cast<size_t>(options_.prompt_tokens));
    result_.prefill_tok_s = repeat(fmt::format("prefill {} tokens (tok/s)", prompt.size()), [&] {
      StreamContext stream(backend_, model_->config());
      Logits logits;
      const auto start = Clock::now();
      stream.append(prompt, LogitsWanted::Last, logits);
      return prompt.size() / seconds_since(start);
    });
  }

  void decode_at_depth_zero() {
    result_.decode_tok_s = repeat(fmt::format("decode {} tokens at depth 0 (tok/s)", options_.gen_tokens), [&] {
      StreamContext stream(backend_, model_->config());
      Logits logits;
      stream.append(tokens_.draw(1), LogitsWanted::Last, logits);
      return decode_rate(stream, logits, options_.gen_tokens);
    });
  }

  void decode_with_full_ring() {
    StreamContext stream(backend_, model_->config());
    Logits logits;
    progress_(fmt::format("filling the ring: {} tokens", kFullRingDepth));
    const auto start = Clock::now();
    const std::vector<int32_t> fill = tokens_.draw(static_cast<size_t>(kFullRingDepth));
    for (size_t done = 0; done < fill.size(); done += StreamContext::kMaxChunk) {
      const size_t n = std::min<size_t>(StreamContext::kMaxChunk, fill.size() - done);
      const bool last = done + n == fill.size();
      stream.append(std::span(fill).subspan(done, n), last ? LogitsWanted::Last : LogitsWanted::None, logits);
      progress_(fmt::format("filling the ring: {}/{} tokens ({:.0f} tok/s)", done + n, fill.size(),
                            (done + n) / seconds_since(start)));
    }
    // Each repetition continues the stream, which stays full: the ring evicts as it wraps.
    result_.decode_full_ring_tok_s =
        repeat(fmt::format("decode {} tokens with the ring full (tok/s)", options_.gen_tokens),
               [&] { return decode_rate(stream, logits, options_.gen_tokens); });
    result_.full_ring_depth = stream.clock();
    result_.full_ring_view = static_cast<uint32_t>(stream.ring().global_view().size());
  }

  void session_figures() {
    SessionConfig config;
    config.max_tokens = 1;               // each input decodes one token: the figures are the calls below
    config.sampler.temperature = 0.0f;   // greedy, as the decode figures
    std::optional<Session> made;
    try {
      made.emplace(model_, backend_, config);
    } catch (const Error& e) {
      result_.session_skipped = e.what();
      progress_(fmt::format("probe and snapshot figures skipped: {}", e.what()));
      return;
    }
    Session& session = *made;
    DiscardEvents events;
    session.input_tokens(tokens_.draw(static_cast<size_t>(options_.prompt_tokens)), kInputFlagRaw, events);

    const std::vector<std::string> candidates = {"yes", "no", "maybe"};
    result_.probe_ms = repeat("discrete probe, 3 candidates (ms)", [&] {
      const auto start = Clock::now();
      session.probe("Is this text about the sea?", candidates, 0, events);
      return 1000.0 * seconds_since(start);
    });

    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / fmt::format("channel-bench-{}.snapshot", ::getpid());
    const auto remove_file = [&path] {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    };
    try {
      result_.snapshot_save_ms = repeat("snapshot save (ms)", [&] {
        // A save right after a save or load of the same clock writes nothing (zero-delta gate),
        // so the stream moves one token before each.
        session.input_tokens(tokens_.draw(1), kInputFlagRaw, events);
        const auto start = Clock::now();
        session.save_snapshot(path.string(), "bench");
        return 1000.0 * seconds_since(start);
      });
      result_.snapshot_bytes = std::filesystem::file_size(path);
      result_.snapshot_slots = session.active_slots();
      result_.snapshot_load_ms = repeat("snapshot load (ms)", [&] {
        const auto start = Clock::now();
        session.load_snapshot(path.string());
        return 1000.0 * seconds_since(start);
      });
    } catch (...) {
      remove_file();
      throw;
    }
    remove_file();
  }

  void memory_figures() {
    const ModelConfig& config = model_->config();
    const auto width = static_cast<uint32_t>(config.n_embd);
    progress_(fmt::format("memory: a store of {} episodes of width {}", kMemoryScanEpisodes, width));
    // Only the centroids and the recall statistics enter the score; the episodes carry no KV here.
    EpisodeStore store(kMemoryScanEpisodes);
    SplitMix64 random(options_.seed);
    for (uint32_t i = 0; i < kMemoryScanEpisodes; ++i) {
      Episode episode;
      episode.created_ms = episode.last_accessed_ms = i;
      episode.centroid = unit_vector(random, width);
      store.add(std::move(episode));
    }
    const std::vector<float> query = unit_vector(random, width);
    const int64_t now_ms = kMemoryScanEpisodes;  // just after the newest episode
    ThreadPool pool(options_.memory_scan_threads);
    // A recall before a prefill ranks the best 128 (session_memory.cpp). The centroids leave
    // every cache first: 10,000 of width 3840 (154 MB) fit in a server's last-level cache, but
    // a recall comes after a decode burst has streamed the weights through it.
    CacheEvictor evictor;
    result_.memory_scan_ms = repeat(fmt::format("memory scan, {} episodes (ms)", kMemoryScanEpisodes), [&] {
      evictor.evict(pool);
      const auto start = Clock::now();
      best_episodes(store, centroid_cosines(store, query, pool), now_ms, kv::kRecallSlots, pool);
      return 1000.0 * seconds_since(start);
    });
    CentroidScan backend_scan(store, backend_, options_.memory_scan_threads);
    backend_scan.cosines(query);
    if (backend_scan.on_device()) {
      result_.memory_scan_device_ms =
          repeat(fmt::format("memory scan on the device, {} episodes (ms)", kMemoryScanEpisodes), [&] {
            const auto start = Clock::now();
            backend_scan.best_episodes(query, now_ms, kv::kRecallSlots);
            return 1000.0 * seconds_since(start);
          });
    }
    result_.memory_scan_episodes = kMemoryScanEpisodes;
    result_.memory_scan_width = width;
    result_.memory_scan_bytes = uint64_t{kMemoryScanEpisodes} * width * sizeof(float);
    result_.memory_scan_threads = pool.size();
    progress_(fmt::format("memory: read bandwidth of {} threads", pool.size()));
    result_.memory_read_gb_s = measure_read_bandwidth({.threads = static_cast<unsigned>(pool.size())}).gb_s;

    // A full episode as the store file holds it (docs/memory-format.md): a record's size does
    // not depend on the fingerprint, only on the geometry.
    const EpisodeFileHeader header = episode_file_header(0, config);
    Episode full;
    full.centroid.assign(width, 0.0f);
    const size_t n = EpisodeStage::kCapacity;
    full.tokens.assign(n, 0);
    full.clocks.assign(n, 0);
    full.kv.slots.assign(n, 0);
    full.kv.positions.assign(n, 0);
    full.kv.moved_by.assign(n, 0);
    for (uint32_t kv_width : header.kv_widths) {
      full.kv.layers.push_back({std::vector<uint16_t>(n * kv_width), std::vector<uint16_t>(n * kv_width)});
    }
    result_.memory_episode_disk_bytes = encode_episode_record(full, header).size();
  }

  std::shared_ptr<const Model> model_;
  Backend& backend_;
  const BenchmarkOptions& options_;
  const BenchmarkProgress& progress_;
  RandomTokens tokens_;
  BenchmarkResult result_;
};

}  // namespace

BenchmarkResult run_engine_benchmark(std::shared_ptr<const Model> model, Backend& backend,
                                     const BenchmarkOptions& options, const BenchmarkProgress& progress) {
  if (options.prompt_tokens < 1) fail("bench: --prompt-tokens must be at least 1");
  if (options.gen_tokens < 1) fail("bench: --gen-tokens must be at least 1");
  if (options.reps < 1) fail("bench: --reps must be at least 1");
  return Bench(std::move(model), backend, options, progress).run();
}

}  // namespace channel
