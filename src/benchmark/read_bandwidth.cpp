#include "benchmark/read_bandwidth.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/huge_page_buffer.h"

namespace channel {
namespace {

// MemAvailable from /proc/meminfo in MiB, 0 if unknown.
size_t available_mib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib / 1024;
  }
  return 0;
}

// Sums words [begin, end) as S equal sub-ranges read in lockstep (S sequential streams), with
// eight independent chains per stream so the loop is bound by memory, not by the latency of one
// add; the compiler vectorizes it. Words past the last whole block of the streams come last.
template <int S>
uint64_t sum_streams(const uint64_t* begin, const uint64_t* end) {
  const size_t total = static_cast<size_t>(end - begin);
  const size_t per = total / S / 8 * 8;
  uint64_t s[S][8] = {};
  for (size_t i = 0; i < per; i += 8) {
    for (int j = 0; j < S; ++j) {
      for (int k = 0; k < 8; ++k) s[j][k] += begin[j * per + i + k];
    }
  }
  uint64_t sum = 0;
  for (const auto& chains : s) {
    for (uint64_t v : chains) sum += v;
  }
  for (size_t i = per * S; i < total; ++i) sum += begin[i];
  return sum;
}

uint64_t sum_words(int streams, const uint64_t* begin, const uint64_t* end) {
  switch (streams) {
    case 1: return sum_streams<1>(begin, end);
    case 2: return sum_streams<2>(begin, end);
    case 4: return sum_streams<4>(begin, end);
    case 8: return sum_streams<8>(begin, end);
    default: return sum_streams<16>(begin, end);
  }
}


}  // namespace

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    size_t value = std::strtoull(text.c_str(), nullptr, 10);
    const char unit = text.back();
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    if (unit == 'G') value <<= 30;
    best = std::max(best, value);
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (best == 0) {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) best = static_cast<size_t>(l3);
  }
#endif
  return best;
}

size_t default_read_buffer_bytes() {
  size_t mib = 2048;
  const size_t avail = available_mib();
  if (avail > 0) mib = std::min(mib, std::max<size_t>(64, avail / 4));
  return mib << 20;
}

ReadBandwidth measure_read_bandwidth(const ReadBandwidthOptions& options) {
  for (int streams : options.stream_counts) {
    if (streams != 1 && streams != 2 && streams != 4 && streams != 8 && streams != 16) {
      fail("read bandwidth: {} streams; the stream counts are 1, 2, 4, 8 or 16", streams);
    }
  }
  ReadBandwidth result;
  result.bytes = options.bytes ? options.bytes : default_read_buffer_bytes();
  const size_t words = result.bytes / sizeof(uint64_t);
  const HugePageBuffer buffer(result.bytes);
  auto* data = reinterpret_cast<uint64_t*>(buffer.data());

  const unsigned n = std::max(1u, options.threads);
  // Parts are whole 4 KiB pages, so no two threads touch the same page.
  const size_t page_words = 4096 / sizeof(uint64_t);
  auto part_begin = [&](unsigned t) { return std::min(words, words / page_words * t / n * page_words); };
  auto part_end = [&](unsigned t) { return t + 1 == n ? words : part_begin(t + 1); };

  // All threads (workers and this one) meet at the barrier: once after the fill, then twice per
  // pass (go, done); this thread takes the time between its go and its done.
  std::barrier sync(static_cast<std::ptrdiff_t>(n) + 1);
  std::atomic<uint64_t> sink{0};
  std::vector<std::jthread> workers;
  workers.reserve(n);
  for (unsigned t = 0; t < n; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = part_begin(t); i < part_end(t); ++i) data[i] = i * 0x9E3779B97F4A7C15ull;
      sync.arrive_and_wait();  // filled
      for (int streams : options.stream_counts) {
        for (int pass = 0; pass < options.passes; ++pass) {
          sync.arrive_and_wait();  // go
          sink.fetch_add(sum_words(streams, data + part_begin(t), data + part_end(t)), std::memory_order_relaxed);
          sync.arrive_and_wait();  // done
        }
      }
    });
  }
  sync.arrive_and_wait();
  for (int streams : options.stream_counts) {
    double best_here = 0;
    for (int pass = 0; pass < options.passes; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_here = std::max(best_here, static_cast<double>(result.bytes) / s / 1e9);
    }
    result.gb_s_by_streams.push_back(best_here);
    if (best_here > result.gb_s) {
      result.gb_s = best_here;
      result.streams = streams;
    }
  }
  for (auto& w : workers) w.join();
  result.checksum = sink.load();
  return result;
}

}  // namespace channel
