// channel_read_bandwidth: how fast N threads can read memory on this machine, the bound that
// batch-1 decode runs into (every weight is read once per token). bench/compare-llamacpp divides
// it by the weight bytes read per token to get the decode ceiling in tok/s.
//
//   channel_read_bandwidth [--threads N] [--size-mib M] [--passes K] [--streams S] [--json]
//
// The measurement (src/benchmark/read_bandwidth.h, shared with `channel bench`'s memory scan
// figure) reads a buffer several times larger than the last-level cache (default 2 GiB, less
// when memory is short) with N threads, each as S interleaved sequential streams; the figure is
// the best pass over S = 1, 2, 4, 8, 16 (or the S given), K passes each, in GB/s.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/read_bandwidth.h"

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

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  channel::ReadBandwidthOptions options;
  options.threads = opt.threads;
  options.bytes = opt.size_mib ? opt.size_mib << 20 : channel::default_read_buffer_bytes();
  options.passes = opt.passes;
  if (opt.streams > 0) options.stream_counts = {opt.streams};
  const size_t mib = options.bytes >> 20;
  const size_t llc = channel::last_level_cache_bytes();
  if (llc > 0 && options.bytes < 4 * llc) {
    std::fprintf(stderr,
                 "channel_read_bandwidth: warning: the %zu MiB buffer is less than 4x the %zu MiB "
                 "last-level cache; the figure may include cache hits\n",
                 mib, llc >> 20);
  }
  channel::ReadBandwidth r;
  try {
    r = channel::measure_read_bandwidth(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "channel_read_bandwidth: %s\n", e.what());
    return 1;
  }

  if (opt.json) {
    std::printf("{\"read_gb_s\": %.3f, \"threads\": %u, \"streams\": %d, \"buffer_mib\": %zu, \"passes\": %d, "
                "\"llc_mib\": %zu, \"best_gb_s_by_streams\": {",
                r.gb_s, opt.threads, r.streams, mib, opt.passes, llc >> 20);
    for (size_t i = 0; i < options.stream_counts.size(); ++i) {
      std::printf("%s\"%d\": %.3f", i ? ", " : "", options.stream_counts[i], r.gb_s_by_streams[i]);
    }
    std::printf("}, \"checksum\": %llu}\n", static_cast<unsigned long long>(r.checksum & 0xffff));
  } else {
    std::printf("read bandwidth: %.2f GB/s (%u threads, %d streams each, %zu MiB buffer, best of %d passes; by streams:",
                r.gb_s, opt.threads, r.streams, mib, opt.passes);
    for (size_t i = 0; i < options.stream_counts.size(); ++i) {
      std::printf(" %d: %.2f", options.stream_counts[i], r.gb_s_by_streams[i]);
    }
    std::printf(")\n");
  }
  return 0;
}
