// Pieces shared by the CLI commands: option helpers, model loading with progress on stderr.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace channel::cli {

// Parses "1,2,3" (spaces allowed) into token ids; throws channel::Error naming the bad item.
std::vector<int32_t> parse_token_list(const std::string& text);

// Loads a model, printing what it loaded (and how long it took) to stderr.
std::shared_ptr<const Model> load_model_verbose(const std::string& path);

// Adds --threads (default: all hardware threads) to a command.
void add_threads_option(CLI::App& command, int& threads);

// Writes ids space-separated on one line to stdout.
void print_ids(const std::vector<int32_t>& ids);

}  // namespace channel::cli
