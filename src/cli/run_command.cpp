// `channel run`: stream a completion of a prompt (chat template applied unless --raw).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "engine/turn_grammar.h"
#include "engine/stream_context.h"
#include "engine/sampler.h"
#include "engine/special_tokens.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace channel::cli {
namespace {

struct RunOptions {
  std::string model_path;
  std::string prompt;
  int max_tokens = 256;
  float temperature = 0.0f;
  uint64_t seed = 0;
  bool raw = false;
  BackendChoice backend;
  QuantizationChoice quantization;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run(const RunOptions& o) {
  std::string model_path = o.model_path;
  use_default_model_if_none(model_path);
  auto model = load_model_verbose(model_path, chosen_load_conversion(o.quantization));
  const ModelConfig& config = model->config();
  const Tokenizer tokenizer = Tokenizer::from_gguf(model->gguf());
  const std::string text = o.raw ? o.prompt : render_chat_turn(config.arch, o.prompt);
  const std::vector<int32_t> prompt = tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/true);
  const SpecialTokens special = SpecialTokens::find(tokenizer, config.arch);
  std::vector<int32_t> stops;  // what ends the model's turn
  for (int32_t id : {special.eos, special.turn_close}) {
    if (id >= 0) stops.push_back(id);
  }

  const auto backend = make_chosen_backend(model, o.backend);
  StreamContext context(*backend, config);
  Sampler sampler(SamplerOptions{.temperature = o.temperature, .seed = o.seed});
  Detokenizer detokenizer(tokenizer);
  Logits logits;

  fmt::print(stderr, "prefilling {} tokens ...\n", prompt.size());
  const auto prefill_start = std::chrono::steady_clock::now();
  context.append(prompt, LogitsWanted::Last, logits);
  const double prefill_seconds = seconds_since(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  int generated = 0;
  const char* stop_reason = "max tokens";
  while (generated < o.max_tokens) {
    const int32_t token = sampler.sample(logits.row(0));
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      stop_reason = "end of turn";
      break;
    }
    ++generated;
    fmt::print("{}", detokenizer.push(token));
    std::fflush(stdout);
    if (generated == o.max_tokens) break;
    context.append(std::span<const int32_t>(&token, 1), LogitsWanted::Last, logits);
  }
  fmt::print("{}\n", detokenizer.flush());
  const double decode_seconds = seconds_since(decode_start);
  fmt::print(stderr, "[{}] prompt {} tokens in {:.2f} s ({:.1f} tok/s); generated {} tokens in {:.2f} s ({:.1f} tok/s)\n",
             stop_reason, prompt.size(), prefill_seconds, prompt.size() / std::max(prefill_seconds, 1e-9), generated,
             decode_seconds, generated / std::max(decode_seconds, 1e-9));
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* run_cmd = app.add_subcommand("run", "Stream a completion of a prompt");
  add_model_option_with_default(*run_cmd, o->model_path);
  run_cmd->add_option("-p,--prompt", o->prompt, "the user's message (or the raw text with --raw)")->required();
  run_cmd->add_option("-n,--max-tokens", o->max_tokens, "most tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  run_cmd->add_option("--temp", o->temperature, "sampling temperature; 0 or less is greedy")->capture_default_str();
  run_cmd->add_option("--seed", o->seed, "sampling seed")->capture_default_str();
  run_cmd->add_flag("--raw", o->raw, "send the prompt as is, without the chat template");
  add_backend_options(*run_cmd, o->backend);
  add_quantization_options(*run_cmd, o->quantization);
  run_cmd->callback([o] { run(*o); });
}

}  // namespace channel::cli
