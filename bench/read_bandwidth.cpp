// channel_read_bandwidth: how fast N threads can read memory on this machine, the bound that
// batch-1 decode runs into (every weight is read once per token). bench/compare-llamacpp divides
// it by the weight bytes read per token to get the decode ceiling in tok/s.
//
//   channel_read_bandwidth [--threads N] [--size-mib M] [--passes K] [--streams S] [--json]
//
// A buffer several times larger than the last-level cache (default 2 GiB, less when memory is
// short) is filled once, each thread writing the part it will read, then read by N threads at
// once, each summing its contiguous part; a pass lasts from the moment all threads are released
// until the last one finishes. Each thread reads its part as S interleaved sequential streams (S
// equal sub-parts read in lockstep): with one stream a core can be latency-bound (on a Xeon, two
// threads read 16 GB/s with one stream each and 24-29 GB/s with eight), since a core's streaming
// rate is bounded by its outstanding cache misses and by how many streams its prefetchers follow.
// The figure is the best pass over S = 1, 2, 4, 8, 16 (or the S given), K passes each, in GB/s
// (1e9 bytes per second): a ceiling, the most the machine gave.
// Plain C++ with no -march flags: the loop is what the compiler makes of it for baseline x86-64
// (SSE2 adds), which is enough, as the bound is the memory system, not the width of the loads.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  size_t size_mib = 0;  // 0: min(2048, a quarter of MemAvailable)
  int passes = 5;
  int streams = 0;  // 0: each of 1, 2, 4, 8, 16
  bool json = false;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "Usage: channel_read_bandwidth [--threads N] [--size-mib M] [--passes K] [--streams S] [--json]\n"
               "Reads a buffer of M MiB (default 2048, or a quarter of the available memory if less)\n"
               "with N threads (default: all cores), each thread as S interleaved sequential streams\n"
               "(1, 2, 4, 8 or 16; default: each of them), K passes per stream count (default 5), and\n"
               "prints the best pass in GB/s (1e9 bytes/s). --json prints one JSON object instead.\n");
  std::exit(code);
}

long parse_positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "channel_read_bandwidth: %s needs a positive integer, got '%s'\n", flag, text);
    std::exit(2);
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "channel_read_bandwidth: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      usage(0);
    } else if (arg == "--threads" || arg == "-t") {
      opt.threads = static_cast<unsigned>(parse_positive("--threads", value()));
    } else if (arg == "--size-mib") {
      opt.size_mib = static_cast<size_t>(parse_positive("--size-mib", value()));
    } else if (arg == "--passes") {
      opt.passes = static_cast<int>(parse_positive("--passes", value()));
    } else if (arg == "--streams") {
      opt.streams = static_cast<int>(parse_positive("--streams", value()));
      if (opt.streams != 1 && opt.streams != 2 && opt.streams != 4 && opt.streams != 8 && opt.streams != 16) {
        std::fprintf(stderr, "channel_read_bandwidth: --streams must be 1, 2, 4, 8 or 16\n");
        std::exit(2);
      }
    } else if (arg == "--json") {
      opt.json = true;
    } else {
      std::fprintf(stderr, "channel_read_bandwidth: unknown argument '%s' (see --help)\n", arg.c_str());
      std::exit(2);
    }
  }
  return opt;
}

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

// Size of the largest CPU cache in bytes (sysfs, then sysconf), 0 if unknown.
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

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  size_t mib = opt.size_mib;
  if (mib == 0) {
    mib = 2048;
    const size_t avail = available_mib();
    if (avail > 0) mib = std::min(mib, std::max<size_t>(64, avail / 4));
  }
  const size_t bytes = mib << 20;
  const size_t words = bytes / sizeof(uint64_t);
  const size_t llc = last_level_cache_bytes();
  if (llc > 0 && bytes < 4 * llc) {
    std::fprintf(stderr,
                 "channel_read_bandwidth: warning: the %zu MiB buffer is less than 4x the %zu MiB "
                 "last-level cache; the figure may include cache hits\n",
                 mib, llc >> 20);
  }

  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::fprintf(stderr, "channel_read_bandwidth: cannot map %zu MiB: %s\n", mib, std::strerror(errno));
    return 1;
  }
  auto* data = static_cast<uint64_t*>(mem);

  const unsigned n = opt.threads;
  // Parts are whole 4 KiB pages, so no two threads touch the same page.
  const size_t page_words = 4096 / sizeof(uint64_t);
  auto part_begin = [&](unsigned t) { return std::min(words, words / page_words * t / n * page_words); };
  auto part_end = [&](unsigned t) { return t + 1 == n ? words : part_begin(t + 1); };

  std::vector<int> stream_counts = {1, 2, 4, 8, 16};
  if (opt.streams > 0) stream_counts = {opt.streams};

  // All threads (workers and main) meet at the barrier: once after the fill, then twice per pass
  // (go, done); main takes the time between its go and its done.
  std::barrier sync(static_cast<std::ptrdiff_t>(n) + 1);
  std::atomic<uint64_t> sink{0};
  std::vector<std::thread> workers;
  workers.reserve(n);
  for (unsigned t = 0; t < n; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = part_begin(t); i < part_end(t); ++i) data[i] = i * 0x9E3779B97F4A7C15ull;
      sync.arrive_and_wait();  // filled
      for (int streams : stream_counts) {
        for (int pass = 0; pass < opt.passes; ++pass) {
          sync.arrive_and_wait();  // go
          sink.fetch_add(sum_words(streams, data + part_begin(t), data + part_end(t)), std::memory_order_relaxed);
          sync.arrive_and_wait();  // done
        }
      }
    });
  }
  sync.arrive_and_wait();
  double best_gbs = 0;
  int best_streams = 0;
  std::vector<double> best_by_streams;
  for (int streams : stream_counts) {
    double best_here = 0;
    for (int pass = 0; pass < opt.passes; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_here = std::max(best_here, static_cast<double>(bytes) / s / 1e9);
    }
    best_by_streams.push_back(best_here);
    if (best_here > best_gbs) {
      best_gbs = best_here;
      best_streams = streams;
    }
  }
  for (auto& w : workers) w.join();
  munmap(mem, bytes);

  if (opt.json) {
    std::printf("{\"read_gb_s\": %.3f, \"threads\": %u, \"streams\": %d, \"buffer_mib\": %zu, \"passes\": %d, "
                "\"llc_mib\": %zu, \"best_gb_s_by_streams\": {",
                best_gbs, n, best_streams, mib, opt.passes, llc >> 20);
    for (size_t i = 0; i < stream_counts.size(); ++i) {
      std::printf("%s\"%d\": %.3f", i ? ", " : "", stream_counts[i], best_by_streams[i]);
    }
    std::printf("}, \"checksum\": %llu}\n", static_cast<unsigned long long>(sink.load() & 0xffff));
  } else {
    std::printf("read bandwidth: %.2f GB/s (%u threads, %d streams each, %zu MiB buffer, best of %d passes; by streams:",
                best_gbs, n, best_streams, mib, opt.passes);
    for (size_t i = 0; i < stream_counts.size(); ++i) std::printf(" %d: %.2f", stream_counts[i], best_by_streams[i]);
    std::printf(")\n");
  }
  return 0;
}
