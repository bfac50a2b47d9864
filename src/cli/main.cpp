// channel: command-line entry point. Errors a user can act on are printed on one line to stderr
// with a non-zero exit code.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Channel: a Gemma inference engine (Gemma 3 and Gemma 4 GGUF models)", "channel"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "channel 0.1.0");
  channel::cli::register_run_command(app);
  channel::cli::register_chat_command(app);
  channel::cli::register_eval_command(app);
  channel::cli::register_tokenize_command(app);
  channel::cli::register_model_commands(app);
  channel::cli::register_serve_command(app);
  channel::cli::register_kv_commands(app);
  channel::cli::register_gpu_command(app);
  channel::cli::register_bench_command(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      // Neither a command nor --serve (which exits from its own callback).
      fmt::print(stderr, "{}", app.help());
      return 1;
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const channel::Error& e) {
    fmt::print(stderr, "channel: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "channel: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Anything else (a thread that would not start, say) also ends with a message, not an abort.
    fmt::print(stderr, "channel: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
