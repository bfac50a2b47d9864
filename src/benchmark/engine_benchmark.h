// `channel bench`: the engine's speed figures on one model and backend, each the median of
// several repetitions after a warm-up. Tokens are drawn at random from the vocabulary (as
// llama-bench does), so any model, trained or random-weight, measures the same work.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "benchmark/statistics.h"
#include "model/model.h"

namespace channel {

struct BenchmarkOptions {
  int prompt_tokens = 512;  // prefill: tokens on a fresh stream
  int gen_tokens = 64;      // decode: tokens generated one at a time
  int reps = 3;             // repetitions of each figure (after one warm-up)
  bool full_ring = true;    // also decode with the whole ring filled (costs one long prefill)
  uint64_t seed = 1;        // of the random tokens
  int memory_scan_threads = 1;  // the memory scan's threads (the CPU's, on every backend)
};

struct BenchmarkResult {
  Summary prefill_tok_s;           // prompt_tokens on a fresh stream
  Summary decode_tok_s;            // depth 0: right after one token
  Summary decode_full_ring_tok_s;  // after full_ring_depth tokens: every ring slot live (count 0 if skipped)
  int64_t full_ring_depth = 0;
  uint32_t full_ring_view = 0;     // slots a global layer reads there
  Summary probe_ms;                // a discrete probe over 3 candidates, after a prompt_tokens turn
  Summary snapshot_save_ms;        // the whole session after that turn
  Summary snapshot_load_ms;
  uint64_t snapshot_bytes = 0;
  uint32_t snapshot_slots = 0;     // live KV slots the snapshot holds
  std::string session_skipped;     // why the probe and snapshot figures are missing, if they are
  // Episodic memory: one recall's scan (every episode scored, the best 128 picked) of a store of
  // memory_scan_episodes episodes whose centroids are the model's width, on the CPU with
  // memory_scan_threads threads, its centroids evicted from the caches before each repetition;
  // the read bandwidth of as many threads (read_bandwidth.h) to compare it with; and what one
  // full episode (64 tokens with their KV on every layer) takes in the store file.
  Summary memory_scan_ms;
  uint32_t memory_scan_episodes = 0;
  uint32_t memory_scan_width = 0;
  uint64_t memory_scan_bytes = 0;  // the centroids read
  int memory_scan_threads = 0;
  double memory_read_gb_s = 0.0;
  double memory_scan_gb_s() const { return gb_s(memory_scan_ms); }
  // The same scan and ranking where a recall on this backend runs it: on a GPU backend's device
  // (engine/centroid_scan.h), the centroids copied there by the warm-up; count 0 on the CPU.
  Summary memory_scan_device_ms;
  double memory_scan_device_gb_s() const { return gb_s(memory_scan_device_ms); }
  double gb_s(const Summary& scan_ms) const { return scan_ms.count ? memory_scan_bytes / (scan_ms.median * 1e6) : 0.0; }
  // The scan's share of the machine's read bandwidth: issue 10's target is 0.8 or more.
  double memory_scan_bandwidth_fraction() const {
    return memory_read_gb_s > 0 ? memory_scan_gb_s() / memory_read_gb_s : 0.0;
  }
  uint64_t memory_episode_disk_bytes = 0;
};

// Progress lines for a person watching (stderr); the result carries every figure.
using BenchmarkProgress = std::function<void(std::string_view)>;

// Uses `backend` as a fresh engine would: its KV is overwritten. Throws channel::Error on bad
// options.
BenchmarkResult run_engine_benchmark(std::shared_ptr<const Model> model, Backend& backend,
                                     const BenchmarkOptions& options, const BenchmarkProgress& progress);

}  // namespace channel
