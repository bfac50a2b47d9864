// `channel serve [--model M]` and the original engine's spelling `channel [--model M] --serve`:
// the binary wire protocol on stdin/stdout (logs on stderr). Without --model: channel-tiny.
#include <fmt/format.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "engine/session.h"
#include "server/server.h"

namespace channel::cli {
namespace {

// The original's default store, in the working directory.
constexpr const char* kDefaultMemoryPath = ".episodic.mem";

struct ServeOptions {
  std::string model_path;
  bool serve = false;  // the top-level --serve flag
  BackendChoice backend;
  QuantizationChoice quantization;
  uint32_t max_tokens = 128;
  uint64_t seed = 0;
  bool tool_call_json = false;
  std::string snapshot_dir;
  bool no_memory = false;
  std::string memory;  // --memory's path; empty after a bare --memory: kDefaultMemoryPath
  int mem_capacity = static_cast<int>(EpisodeStore::kDefaultCapacity);
  // Accepted for compatibility with the original engine's command line.
  bool quiescence = false;
  int anchors = 32, window = 512, recall = 96;
  float quiescence_threshold = 0.0f;
};

void warn_unsupported(const ServeOptions& o, const CLI::App& app) {
  const auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--window") || given("--recall")) {
    fmt::print(stderr, "channel: warning: --window and --recall are ignored (the geometry is fixed: 4096 slots, 128 recall), "
                       "as in the original engine\n");
  }
  if (given("--anchors")) {
    fmt::print(stderr, "channel: warning: --anchors is ignored: the first system prompt or input sets the anchors\n");
  }
  if (o.quiescence || given("--quiescence-threshold")) {
    fmt::print(stderr, "channel: warning: quiescence gating is not built; all layers always run\n");
  }
}

void add_serve_options(CLI::App& app, ServeOptions& o) {
  add_model_option_with_default(app, o.model_path);
  app.add_option("-n,--max-tokens", o.max_tokens, "response tokens per decode burst (OP_SET_CONFIG can change it)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "sampler seed")->capture_default_str();
  add_backend_options(app, o.backend);
  add_quantization_options(app, o.quantization);
  app.add_flag("--tool-call-json", o.tool_call_json,
               "Channel extension: OP_TOOL_CALL carries the arguments as JSON instead of Gemma's notation (the "
               "notation is kept when it does not convert)");
  app.add_option("--snapshot-dir", o.snapshot_dir,
                 "Channel extension: SNAPSHOT_SAVE/LOAD paths are relative to DIR and may not leave it (no absolute "
                 "paths, no '..', no symbolic link out of it: OP_ERROR); without it paths are used as given, relative "
                 "to the working directory")
      ->type_name("DIR");
  app.add_option("--anchors", o.anchors, "accepted for compatibility; the first input sets the anchors");
  app.add_option("--window", o.window, "accepted and ignored, as in the original");
  app.add_option("--recall", o.recall, "accepted and ignored, as in the original");
  app.add_option("--memory,--storage", o.memory,
                 fmt::format("keep committed episodes in the store file PATH (default {} in the working directory; "
                             "docs/memory-format.md) and load them on start; without it episodes live in memory only. "
                             "Another model's or a corrupt store is left as it is and PATH.<fingerprint> is used",
                             kDefaultMemoryPath))
      ->expected(0, 1)
      ->type_name("[PATH]");
  app.add_option("--mem-capacity,--memory-capacity", o.mem_capacity,
                 "episodes kept, in memory and in the store file; the oldest are dropped first")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-memory", o.no_memory, "disable episodic memory: nothing is staged, committed or stored");
  app.add_flag("--quiescence", o.quiescence, "accepted; quiescence gating is not built");
  app.add_option("--quiescence-threshold", o.quiescence_threshold, "accepted; quiescence gating is not built");
}

EpisodicMemoryOptions memory_options(const ServeOptions& o, const CLI::App& app) {
  const bool persistent = app.count("--memory") > 0;
  if (persistent && o.no_memory) fail("--memory and --no-memory contradict each other");
  EpisodicMemoryOptions memory;
  memory.enabled = !o.no_memory;
  memory.capacity = static_cast<size_t>(o.mem_capacity);
  if (persistent) memory.path = o.memory.empty() ? kDefaultMemoryPath : o.memory;
  memory.scan_threads = o.backend.options.threads;
  return memory;
}

void configure_memory(Session& session, const EpisodicMemoryOptions& memory) {
  for (const std::string& notice : session.configure_memory(memory)) fmt::print(stderr, "channel: warning: {}\n", notice);
  if (!memory.path.empty()) {
    fmt::print(stderr, "episodic memory: {} episodes loaded (capacity {})\n", session.episodes().episodes().size(),
               memory.capacity);
  }
}

int run_serve(const ServeOptions& o, const CLI::App& app) {
  warn_unsupported(o, app);
  // Checked before the model loads, which takes a while.
  const LoadConversion conversion = chosen_load_conversion(o.quantization);
  const server::SnapshotPaths snapshot_paths =
      o.snapshot_dir.empty() ? server::SnapshotPaths() : server::SnapshotPaths(o.snapshot_dir);
  const EpisodicMemoryOptions memory = memory_options(o, app);
  std::string model_path = o.model_path;
  use_default_model_if_none(model_path);
  auto model = load_model_verbose(model_path, conversion);
  const auto backend = make_chosen_backend(model, o.backend);
  SessionConfig config;
  config.max_tokens = o.max_tokens;
  config.sampler.seed = o.seed;
  // As the original: --quiescence means threshold 0.001, --quiescence-threshold sets it. The value
  // is stored only: this build skips no layers.
  if (o.quiescence) config.quiescence_threshold = 0.001f;
  if (app.count("--quiescence-threshold") > 0) config.quiescence_threshold = o.quiescence_threshold;
  Session session(model, *backend, config);
  configure_memory(session, memory);
  fmt::print(stderr, "serving on stdin/stdout\n");
  return server::serve(session, server::ServerOptions{.is_gpu = backend->is_gpu(),
                                                     .tool_call_json = o.tool_call_json,
                                                     .snapshot_paths = snapshot_paths});
}

}  // namespace

void register_serve_command(CLI::App& app) {
  // The original's spelling: options on the top level plus --serve.
  auto top = std::make_shared<ServeOptions>();
  add_serve_options(app, *top);
  app.add_flag("--serve", top->serve, "serve the binary protocol on stdin/stdout (same as `channel serve`)");
  app.final_callback([top, &app] {
    if (top->serve && app.get_subcommands().empty()) std::exit(run_serve(*top, app));
  });

  auto o = std::make_shared<ServeOptions>();
  CLI::App* serve = app.add_subcommand("serve", "Serve the original Channel wire protocol on stdin/stdout");
  add_serve_options(*serve, *o);
  serve->callback([o, serve] { std::exit(run_serve(*o, *serve)); });
}

}  // namespace channel::cli
