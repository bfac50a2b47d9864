// Pieces shared by the CLI commands: option helpers, model loading with progress on stderr.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "model/model.h"

namespace channel::cli {

// Parses "1,2,3" (spaces allowed) into token ids; throws channel::Error naming the bad item.
std::vector<int32_t> parse_token_list(const std::string& text);

// Adds quantization on load to a command, in the original engine's spelling: --q4 (also --mixed,
// --q4-mixed), --q8 and --quant TYPE. Read by chosen_load_conversion.
struct QuantizationChoice {
  bool q4 = false;
  bool q8 = false;
  std::string quant;  // a type name, or empty
};
void add_quantization_options(CLI::App& command, QuantizationChoice& choice);

// The conversion the options chose; throws channel::Error for an unknown --quant type (listing
// the valid ones) or for more than one of the three options.
LoadConversion chosen_load_conversion(const QuantizationChoice& choice);

// Loads a model, converting its weights as `conversion` says, printing what it loaded, the
// conversion's progress and how long each took to stderr.
std::shared_ptr<const Model> load_model_verbose(const std::string& path, const LoadConversion& conversion = {});

// Adds the backend choice to a command: --backend cpu|vulkan, --gpu (= vulkan), --gpu-device N,
// --layers-per-submit N and --threads (default: all hardware threads). The choice is read by make_chosen_backend.
struct BackendChoice {
  BackendOptions options;
  std::string name = "cpu";
  bool gpu = false;
};
void add_backend_options(CLI::App& command, BackendChoice& choice);

// The backend the options chose (--gpu wins over --backend), with a line on stderr saying what
// it runs on.
std::unique_ptr<Backend> make_chosen_backend(std::shared_ptr<const Model> model, const BackendChoice& choice);

// Adds the model option (`name`: "-m,--model", or a positional name): a GGUF file or a Hugging
// Face model directory (Model::load tells them apart).
CLI::Option* add_model_option(CLI::App& command, const std::string& name, std::string& path);

// The model `run`, `chat`, `serve` and `bench` use without --model: channel-tiny, committed as
// models/channel-tiny.gguf. The path is that of the source tree CMake configured this binary
// from, so a build in any folder finds it with no download; the environment variable
// CHANNEL_DEFAULT_MODEL names another file (for a binary that runs away from its source tree).
std::string default_model_path();

// -m,--model as add_model_option adds it, not required: --help says what is used without it.
CLI::Option* add_model_option_with_default(CLI::App& command, std::string& path);

// Leaves a given path as it is; an empty one becomes default_model_path(), with a line on stderr
// naming it. A missing default file is an error that names it and says where it comes from.
void use_default_model_if_none(std::string& path);

// Writes ids space-separated on one line to stdout.
void print_ids(const std::vector<int32_t>& ids);

}  // namespace channel::cli
