// How fast N threads can read memory on this machine: the bound that batch-1 decode and
// episodic memory's scan run into. bench/read_bandwidth.cpp (channel_read_bandwidth) prints it;
// `channel bench` divides the memory scan's rate by it.
//
// A buffer several times larger than the last-level cache, on huge pages where Linux allows them
// as the CPU backend's weights are (core/huge_page_buffer.h: on 4 KiB pages two threads of the
// 2-core build machine read ~29 GB/s, on huge pages ~35), is filled once, each thread writing
// the part it will read, then read by N threads at once, each summing its contiguous part; a
// pass lasts from the moment all threads are released until the last one finishes. Each thread
// reads its part as S interleaved sequential streams (S equal sub-parts read in lockstep): with
// one stream a core can be latency-bound (on a Xeon, two threads read 16 GB/s with one stream
// each and 24-29 GB/s with eight), since a core's streaming rate is bounded by its outstanding
// cache misses and by how many streams its prefetchers follow. The figure is the best pass over
// the stream counts, K passes each, in GB/s (1e9 bytes per second): a ceiling, the most the
// machine gave. Plain C++ built without -march flags: the loop is what the compiler makes of it
// for baseline x86-64 (SSE2 adds), which is enough, as the bound is the memory system, not the
// width of the loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace channel {

struct ReadBandwidthOptions {
  unsigned threads = 1;
  size_t bytes = 0;  // the buffer; 0: default_read_buffer_bytes()
  int passes = 5;    // per stream count
  std::vector<int> stream_counts = {1, 2, 4, 8, 16};  // each 1, 2, 4, 8 or 16
};

struct ReadBandwidth {
  double gb_s = 0.0;  // the best pass of all
  int streams = 0;    // the stream count it had
  std::vector<double> gb_s_by_streams;  // the best pass of each of options.stream_counts
  size_t bytes = 0;                     // the buffer read
  uint64_t checksum = 0;                // of the words read, so the reads cannot be left out
};

// Size of the largest CPU cache in bytes (sysfs, then sysconf), 0 if unknown.
size_t last_level_cache_bytes();

// 2 GiB, or a quarter of the available memory if that is less (at least 64 MiB).
size_t default_read_buffer_bytes();

// Throws channel::Error when the buffer cannot be mapped or a stream count is not one of the five.
ReadBandwidth measure_read_bandwidth(const ReadBandwidthOptions& options);

}  // namespace channel
