// `channel tokenize`: token ids of text, as llama.cpp's llama_tokenize with add_special and
// parse_special.
#include <fmt/format.h>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "model/hf_directory.h"
#include "tokenizer/escapes.h"
#include "tokenizer/tokenizer.h"

namespace channel::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  std::string lines_path;
};

void run_tokenize(const TokenizeOptions& o) {
  // Only the vocabulary is needed: no weights are bound, so a vocab-only GGUF works too.
  const Tokenizer tokenizer = Tokenizer::from_gguf(open_model_path(o.model_path));
  const std::vector<std::string> inputs =
      o.lines_path.empty() ? std::vector<std::string>{o.text} : read_lines_file(o.lines_path);
  for (const std::string& input : inputs) print_ids(tokenizer.encode(input, /*add_special=*/true, /*parse_special=*/true));
}

}  // namespace

void register_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* tokenize = app.add_subcommand("tokenize", "Print the token ids of text (BOS first, special tokens parsed)");
  add_model_option(*tokenize, "-m,--model", o->model_path)->required()->description(
      "GGUF model or vocabulary file, or a Hugging Face model directory");
  auto* text = tokenize->add_option("--text", o->text, "the text to tokenize");
  auto* lines = tokenize->add_option("--lines", o->lines_path,
                                     "file with one string per line (escapes: \\n \\t \\r \\\\ \\xHH); one output line each")
                    ->check(CLI::ExistingFile);
  text->excludes(lines);
  tokenize->callback([o, text, lines] {
    if (text->count() == 0 && lines->count() == 0) fail("tokenize needs --text or --lines");
    run_tokenize(*o);
  });
}

}  // namespace channel::cli
