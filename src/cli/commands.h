// Each CLI command registers itself on the top-level app.
#pragma once

#include <CLI/CLI.hpp>

namespace channel::cli {

void register_bench_command(CLI::App& app);
void register_chat_command(CLI::App& app);
void register_eval_command(CLI::App& app);
void register_gpu_command(CLI::App& app);
void register_kv_commands(CLI::App& app);
void register_model_commands(CLI::App& app);
void register_run_command(CLI::App& app);
// Also adds the original engine's top-level --serve spelling to `app`.
void register_serve_command(CLI::App& app);
void register_tokenize_command(CLI::App& app);

}  // namespace channel::cli
