// `channel bench`: prefill, decode (depth 0 and with the ring full), probe, snapshot and memory
// figures of one model on one backend; a table on stdout and, with --json, one JSON object as the last
// line. Progress goes to stderr.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "benchmark/engine_benchmark.h"
#include "cli/cli_common.h"
#include "cli/commands.h"

namespace channel::cli {
namespace {

struct BenchCliOptions {
  std::string model_path;
  BackendChoice backend;
  QuantizationChoice quantization;
  BenchmarkOptions bench;
  bool no_full_ring = false;
  bool json = false;
};

// A figure that was not measured is null, not 0.
nlohmann::json median_json(const Summary& s) { return s.count ? nlohmann::json(s.median) : nlohmann::json(nullptr); }

nlohmann::json summary_json(const Summary& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

void print_row(std::string_view test, const Summary& s, std::string_view unit, std::string_view note = "") {
  if (s.count == 0) return;
  fmt::print("{:<34} {:>10.2f} {:<6} {:>10.2f} {:>10.2f}  {}\n", test, s.median, unit, s.min, s.max, note);
}

void print_table(const BenchCliOptions& o, const BenchmarkResult& r, const Backend& backend, const ModelConfig& c) {
  fmt::print("model: {} ({} {}, {} layers, embedding {})\n", o.model_path, arch_display_name(c.arch), c.model_name,
             c.n_layer, c.n_embd);
  fmt::print("backend: {}; {} repetitions after a warm-up\n\n", backend.description(), o.bench.reps);
  fmt::print("{:<34} {:>10} {:<6} {:>10} {:>10}\n", "test", "median", "", "min", "max");
  print_row(fmt::format("prefill pp{}", o.bench.prompt_tokens), r.prefill_tok_s, "tok/s");
  print_row(fmt::format("decode tg{} at depth 0", o.bench.gen_tokens), r.decode_tok_s, "tok/s");
  print_row(fmt::format("decode tg{} ring full", o.bench.gen_tokens), r.decode_full_ring_tok_s, "tok/s",
            fmt::format("depth {}, {} slots read", r.full_ring_depth, r.full_ring_view));
  print_row("discrete probe, 3 candidates", r.probe_ms, "ms");
  print_row("snapshot save", r.snapshot_save_ms, "ms",
            fmt::format("{:.1f} MiB, {} slots", r.snapshot_bytes / 1048576.0, r.snapshot_slots));
  print_row("snapshot load", r.snapshot_load_ms, "ms");
  if (!r.session_skipped.empty()) fmt::print("probe and snapshot: skipped ({})\n", r.session_skipped);
  print_row(fmt::format("memory scan, {} episodes", r.memory_scan_episodes), r.memory_scan_ms, "ms",
            fmt::format("width {}, {:.1f} MB of centroids, {:.2f} GB/s = {:.0f}% of the {:.2f} GB/s {} CPU threads read",
                        r.memory_scan_width, r.memory_scan_bytes / 1e6, r.memory_scan_gb_s(),
                        100 * r.memory_scan_bandwidth_fraction(), r.memory_read_gb_s, r.memory_scan_threads));
  print_row(fmt::format("memory scan on GPU, {} episodes", r.memory_scan_episodes), r.memory_scan_device_ms, "ms",
            fmt::format("the same centroids in device memory, {:.2f} GB/s", r.memory_scan_device_gb_s()));
  fmt::print("episode store: {} bytes ({:.2f} MiB) per 64-token episode on disk\n", r.memory_episode_disk_bytes,
             r.memory_episode_disk_bytes / 1048576.0);
}

nlohmann::json result_json(const BenchCliOptions& o, const BenchmarkResult& r, const Backend& backend) {
  nlohmann::json j = {
      {"model", o.model_path},
      {"backend", backend.is_gpu() ? "vulkan" : "cpu"},
      {"backend_description", backend.description()},
      {"threads", o.backend.options.threads},
      {"prompt_tokens", o.bench.prompt_tokens},
      {"gen_tokens", o.bench.gen_tokens},
      {"reps", o.bench.reps},
      {"prefill_tok_s", r.prefill_tok_s.median},
      {"decode_tok_s", r.decode_tok_s.median},
      {"decode_full_ring_tok_s", median_json(r.decode_full_ring_tok_s)},
      {"full_ring_depth", r.full_ring_depth},
      {"probe_ms", median_json(r.probe_ms)},
      {"snapshot_save_ms", median_json(r.snapshot_save_ms)},
      {"snapshot_load_ms", median_json(r.snapshot_load_ms)},
      {"snapshot_bytes", r.snapshot_bytes},
      {"snapshot_slots", r.snapshot_slots},
      {"memory_scan_ms", median_json(r.memory_scan_ms)},
      {"memory_scan_episodes", r.memory_scan_episodes},
      {"memory_scan_width", r.memory_scan_width},
      {"memory_scan_bytes", r.memory_scan_bytes},
      {"memory_scan_gb_s", r.memory_scan_gb_s()},
      {"memory_scan_threads", r.memory_scan_threads},
      {"memory_read_gb_s", r.memory_read_gb_s},
      {"memory_scan_bandwidth_fraction", r.memory_scan_bandwidth_fraction()},
      {"memory_scan_device_ms", median_json(r.memory_scan_device_ms)},
      {"memory_scan_device_gb_s", r.memory_scan_device_gb_s()},
      {"memory_episode_disk_bytes", r.memory_episode_disk_bytes},
  };
  if (!r.session_skipped.empty()) j["session_skipped"] = r.session_skipped;
  j["spread"] = {{"prefill_tok_s", summary_json(r.prefill_tok_s)},
                 {"decode_tok_s", summary_json(r.decode_tok_s)},
                 {"decode_full_ring_tok_s", summary_json(r.decode_full_ring_tok_s)},
                 {"probe_ms", summary_json(r.probe_ms)},
                 {"snapshot_save_ms", summary_json(r.snapshot_save_ms)},
                 {"snapshot_load_ms", summary_json(r.snapshot_load_ms)},
                 {"memory_scan_ms", summary_json(r.memory_scan_ms)},
                 {"memory_scan_device_ms", summary_json(r.memory_scan_device_ms)}};
  return j;
}

void run_bench(BenchCliOptions& o) {
  o.bench.full_ring = !o.no_full_ring;
  o.bench.memory_scan_threads = o.backend.options.threads;
  use_default_model_if_none(o.model_path);  // the table and the JSON name the model used
  auto model = load_model_verbose(o.model_path, chosen_load_conversion(o.quantization));
  const auto backend = make_chosen_backend(model, o.backend);
  const BenchmarkResult result = run_engine_benchmark(
      model, *backend, o.bench, [](std::string_view line) { fmt::print(stderr, "bench: {}\n", line); });
  print_table(o, result, *backend, model->config());
  if (o.json) fmt::print("{}\n", result_json(o, result, *backend).dump());
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchCliOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure prefill, decode (depth 0 and ring full), probe, snapshot and memory scan speed on random tokens");
  add_model_option_with_default(*bench, o->model_path);
  add_backend_options(*bench, o->backend);
  add_quantization_options(*bench, o->quantization);
  bench->add_option("-p,--prompt-tokens", o->bench.prompt_tokens, "prefill: tokens on a fresh stream")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  bench->add_option("-n,--gen-tokens", o->bench.gen_tokens, "decode: tokens generated one at a time")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  bench->add_option("-r,--reps", o->bench.reps, "repetitions of each figure, after one warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench->add_option("--seed", o->bench.seed, "seed of the random tokens")->capture_default_str();
  bench->add_flag("--no-full-ring", o->no_full_ring,
                  "skip decode with the ring full (it first prefills 4032 tokens)");
  bench->add_flag("--json", o->json, "also print all figures as one JSON object on the last stdout line");
  bench->callback([o] { run_bench(*o); });
}

}  // namespace channel::cli
