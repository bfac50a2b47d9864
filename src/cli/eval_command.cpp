// `channel eval`: all-position logits of a token sequence (for parity checks against llama.cpp).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "engine/stream_context.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace channel::cli {
namespace {

struct EvalOptions {
  std::string model_path;
  std::string tokens;
  std::string prompt;
  std::string logits_out;
  int greedy = 0;
  BackendChoice backend;
  QuantizationChoice quantization;
};

void write_logits(const std::string& path, const Logits& logits) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) fail("cannot write logits to '{}': {}", path, std::strerror(errno));
  const size_t n = logits.values.size();
  if (std::fwrite(logits.values.data(), sizeof(float), n, file.get()) != n) fail("writing '{}' failed", path);
}

void run_eval(const EvalOptions& o) {
  auto model = load_model_verbose(o.model_path, chosen_load_conversion(o.quantization));
  std::vector<int32_t> tokens;
  if (!o.tokens.empty()) {
    tokens = parse_token_list(o.tokens);  // exactly these tokens: no BOS is added
  } else {
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->gguf());
    tokens = tokenizer.encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  const auto backend = make_chosen_backend(model, o.backend);
  StreamContext context(*backend, model->config());
  Logits logits;
  context.append(tokens, LogitsWanted::All, logits);
  if (!o.logits_out.empty()) write_logits(o.logits_out, logits);

  std::vector<int32_t> best;
  for (int64_t r = 0; r < logits.n_rows; ++r) best.push_back(argmax(logits.row(r)));
  fmt::print("argmax: ");
  print_ids(best);

  if (o.greedy > 0) {
    std::vector<int32_t> generated;
    int32_t next = best.back();
    for (int i = 0; i < o.greedy; ++i) {
      generated.push_back(next);
      if (i + 1 == o.greedy) break;
      context.append(std::span<const int32_t>(&next, 1), LogitsWanted::Last, logits);
      next = argmax(logits.row(0));
    }
    fmt::print("greedy: ");
    print_ids(generated);
  }
}

}  // namespace

void register_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* eval = app.add_subcommand("eval", "Evaluate a token sequence and write the logits of every position");
  add_model_option(*eval, "-m,--model", options->model_path)->required();
  auto* tokens = eval->add_option("--tokens", options->tokens, "comma-separated token ids, used as given (no BOS added)");
  auto* prompt = eval->add_option("-p,--prompt", options->prompt, "text, tokenized with BOS and special tokens");
  tokens->excludes(prompt);
  eval->add_option("--logits-out", options->logits_out,
                   "write all-position logits here: raw little-endian f32, n_tokens x n_vocab");
  eval->add_option("--greedy", options->greedy, "after the sequence, greedily generate N tokens and print them")
      ->check(CLI::Range(0, 4096));
  add_backend_options(*eval, options->backend);
  add_quantization_options(*eval, options->quantization);
  eval->callback([options] {
    if (options->tokens.empty() && options->prompt.empty()) fail("eval needs --tokens or --prompt");
    run_eval(*options);
  });
}

}  // namespace channel::cli
