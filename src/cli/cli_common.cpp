#include "cli/cli_common.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <thread>

#include <unistd.h>

#include "core/error.h"
#include "core/text.h"

namespace channel::cli {
namespace {

void add_threads_option(CLI::App& command, int& threads) {
  threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  command.add_option("-t,--threads", threads, "CPU threads")->capture_default_str()->check(CLI::Range(1, 1024));
}

// "converted 40 weight matrices to Q4_0, 1 to BF16 (0.09 s)": what the load made of each matrix.
void print_conversion_summary(const std::vector<ConvertedWeight>& converted, double seconds) {
  if (converted.empty()) {
    fmt::print(stderr, "no weight matrix converted: the stored types are already as narrow (or quantized)\n");
    return;
  }
  std::map<std::string_view, int> per_type;
  for (const ConvertedWeight& weight : converted) ++per_type[ggml_type_traits(weight.type).name];
  std::string counts;
  for (const auto& [type, count] : per_type) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, type);
  }
  fmt::print(stderr, "converted {} weight matrices on load: {} ({:.2f} s)\n", converted.size(), counts, seconds);
}

}  // namespace

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string_view item = trim(std::string_view(text).substr(pos, comma - pos), " \t");
    int32_t value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size()) {
      fail("'{}' in the token list is not a token id (expected comma-separated integers like 2,651,1902)", item);
    }
    ids.push_back(value);
    pos = comma + 1;
  }
  return ids;
}

void add_quantization_options(CLI::App& command, QuantizationChoice& choice) {
  command.add_flag("--q4,--mixed,--q4-mixed", choice.q4,
                   "convert on load: Q4_0 linear layers, Q8_0 output, BF16 token embeddings (Gemma's tied output "
                   "reads the BF16 embeddings); only F32/F16/BF16 weights are converted, and only to a narrower type");
  command.add_flag("--q8", choice.q8,
                   "convert on load: Q8_0 linear layers and output, BF16 token embeddings (as --q4)");
  command.add_option("--quant", choice.quant,
                     "convert on load every weight matrix (linear layers, output, token embeddings) to TYPE: "
                     "q4_0, q8_0, f16, bf16 or f32 (only where the stored type is wider and not quantized)")
      ->type_name("TYPE");
}

LoadConversion chosen_load_conversion(const QuantizationChoice& choice) {
  if (int{choice.q4} + int{choice.q8} + int{!choice.quant.empty()} > 1) {
    fail("--q4, --q8 and --quant choose the weight types on load: give one of them");
  }
  if (choice.q4) return LoadConversion::q4_mix();
  if (choice.q8) return LoadConversion::q8_mix();
  if (choice.quant.empty()) return {};
  const std::optional<GgmlType> type = ggml_type_from_name(choice.quant);
  if (!type) fail("--quant: unknown weight type '{}' (use q4_0, q8_0, f16, bf16 or f32)", choice.quant);
  return LoadConversion::uniform(*type);
}

std::shared_ptr<const Model> load_model_verbose(const std::string& path, const LoadConversion& conversion) {
  const auto start = std::chrono::steady_clock::now();
  fmt::print(stderr, "loading {} ...\n", path);
  // Progress on a terminal; a log gets the summary lines only.
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  auto conversion_start = start;
  ModelLoadOptions options;
  options.conversion = conversion;
  options.conversion_progress = [&](int done, int total) {
    if (done == 0) {
      conversion_start = std::chrono::steady_clock::now();
      fmt::print(stderr, "converting {} weight matrices ...{}", total, terminal ? "" : "\n");
    } else if (terminal) {
      fmt::print(stderr, "\rconverting {} weight matrices ... {}/{}", total, done, total);
    }
    if (done == total && terminal) fmt::print(stderr, "\r\x1b[K");
  };
  auto model = Model::load(path, options);
  if (conversion.converts_anything()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - conversion_start).count();
    print_conversion_summary(model->converted_weights(), seconds);
  }
  if (const MappedFile* mapping = model->gguf().mapping()) {
    mapping->prefetch([terminal](size_t done, size_t total) {
      if (terminal) {
        fmt::print(stderr, "\rreading weights {:3.0f}% ({:.2f} / {:.2f} GiB)", 100.0 * done / total,
                   done / double(1 << 30), total / double(1 << 30));
        if (done == total) fmt::print(stderr, "\r\x1b[K");
      }
    });
  }
  const auto& c = model->config();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "loaded {} model '{}': {} layers, embedding {}, vocabulary {} ({:.2f} s)\n",
             arch_display_name(c.arch), c.model_name, c.n_layer, c.n_embd, c.n_vocab, seconds);
  return model;
}

CLI::Option* add_model_option(CLI::App& command, const std::string& name, std::string& path) {
  return command.add_option(name, path, "GGUF model file, or a Hugging Face model directory (config.json, tokenizer, safetensors)")
      ->check(CLI::ExistingPath);
}

std::string default_model_path() {
  if (const char* path = std::getenv("CHANNEL_DEFAULT_MODEL"); path != nullptr && *path != '\0') return path;
  return CHANNEL_DEFAULT_MODEL_PATH;
}

CLI::Option* add_model_option_with_default(CLI::App& command, std::string& path) {
  return add_model_option(command, "-m,--model", path)
      ->description(fmt::format("GGUF model file, or a Hugging Face model directory (config.json, tokenizer, "
                                "safetensors). Default: channel-tiny, the small model trained by the project, at "
                                "{} (models/channel-tiny.gguf of the source tree this binary was built from; the "
                                "environment variable CHANNEL_DEFAULT_MODEL names another file)",
                                CHANNEL_DEFAULT_MODEL_PATH));
}

void use_default_model_if_none(std::string& path) {
  if (!path.empty()) return;
  path = default_model_path();
  if (!std::filesystem::exists(path)) {
    fail("no --model given, and the default model {} is missing (models/channel-tiny.gguf is committed in the "
         "source tree; CHANNEL_DEFAULT_MODEL or --model name another model)",
         path);
  }
  fmt::print(stderr, "no --model given: using the default model channel-tiny, {}\n", path);
}

void add_backend_options(CLI::App& command, BackendChoice& choice) {
  add_threads_option(command, choice.options.threads);
  command.add_option("--backend", choice.name, "compute backend: cpu or vulkan")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "vulkan"}));
  command.add_flag("--gpu", choice.gpu, "run on the GPU (same as --backend vulkan)");
  command.add_option("--gpu-device", choice.options.gpu_device,
                     "Vulkan device index as `channel gpu list` shows it (default: the best one)");
  command.add_option("--layers-per-submit", choice.options.layers_per_submit,
                     "Vulkan: layers recorded per command-buffer submit")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}

std::unique_ptr<Backend> make_chosen_backend(std::shared_ptr<const Model> model, const BackendChoice& choice) {
  BackendOptions options = choice.options;
  options.kind = choice.gpu ? BackendKind::Vulkan : *parse_backend_kind(choice.name);
  auto backend = make_backend(std::move(model), options);
  fmt::print(stderr, "backend: {}\n", backend->description());
  return backend;
}

void print_ids(const std::vector<int32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  fmt::print("{}\n", line);
}

}  // namespace channel::cli
