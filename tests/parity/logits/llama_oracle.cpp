// llama_oracle: runs llama.cpp (the prebuilt peer, see tests/parity/CMakeLists.txt) on exact token
// ids and reports what the parity tests compare Channel against. Its command line mirrors
// `channel eval` so that run_parity.py can drive both the same way:
//
//   llama_oracle eval     --model M --tokens 2,17,4 --logits-out FILE [--greedy N]
//                         [--tokens 2,9 --logits-out FILE2 ...]     all-position logits [+ greedy]
//   llama_oracle variants                                             llama.cpp CPU variants here
//   llama_oracle quantize --model M --out Q --type q4_0 [--output-type q8_0] [--token-embedding-type bf16]
//
// eval feeds the tokens as given (no BOS is added) in a single batch, writes the logits of every
// position as raw little-endian f32 (n_tokens rows of n_vocab) and prints the argmax of each
// position on a line "argmax: ...". With --greedy N it then prints the N greedily chosen ids
// (argmax of the raw logits, ties to the lowest id) on a line "greedy: ...", as `channel eval
// --greedy N` does, then each step's runner-up ("greedy_runner_up: ...") and the gap between the
// two logits over the row's root mean square ("greedy_margin: ...": how near the step was to a
// tie). Several --tokens (each with its --logits-out) are evaluated in order, each in a context of
// its own, so that one process (one model load: about a second for a 262144-token vocabulary)
// serves every prompt of a model; the lines come out in the same order.
// Everything runs on the CPU, by default with llama.cpp's own defaults (flash attention auto, which
// is on for the CPU; f16 KV cache; Q4_0 weights repacked); --flash-attn, --kv-type and --no-repack
// change them, to see how far llama.cpp moves from itself (its noise floor for a parity threshold).
// --cpu-variant loads one CPU variant library only (cpu_variants.h: why); eval prints it
// on a line "cpu_variant: NAME". variants prints one line per variant this CPU runs
// ("variant: NAME SCORE FEATURE,FEATURE,...", best score first), then "default: NAME" (what llama.cpp
// alone would load) and "reference: NAME" (what --cpu-variant reference loads, its default).
// quantize writes M quantized by llama_model_quantize as `llama-quantize --pure` does (every
// quantizable matrix to --type), with llama-quantize's --output-tensor-type and
// --token-embedding-type overrides: the reference for Channel's quantization on load.
#include <CLI/CLI.hpp>
#include <ggml-backend.h>
#include <llama.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu_variants.h"

static_assert(std::endian::native == std::endian::little, "logits files are written in host byte order");

namespace {

struct Options {
  std::string model;
  std::vector<std::string> prompts;  // --tokens, one per prompt
  std::vector<std::string> logits_out;
  int n_generate = 0;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string flash_attn = "auto";
  std::string kv_type = "f16";
  std::string cpu_variant = "reference";
  bool no_repack = false;
  bool verbose = false;
  // quantize
  std::string quantized_out;
  std::string quant_type;
  std::string output_type;
  std::string token_embedding_type;
};

// llama.cpp logs model loading in detail; without --verbose only its errors get through.
// A GGML_LOG_LEVEL_CONT message continues the previous one, so it inherits that one's fate.
void log_filter(ggml_log_level level, const char* text, void* user_data) {
  static bool previous_shown = false;
  const bool verbose = *static_cast<const bool*>(user_data);
  const bool show = level == GGML_LOG_LEVEL_CONT ? previous_shown : verbose || level >= GGML_LOG_LEVEL_ERROR;
  previous_shown = show;
  if (show) std::fputs(text, stderr);
}

// Comma-separated ids, each inside the model's vocabulary of n_vocab tokens.
std::vector<llama_token> parse_tokens(const std::string& list, int32_t n_vocab) {
  std::vector<llama_token> tokens;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) throw std::runtime_error("bad token id '" + item + "' in --tokens");
    if (value < 0 || value >= n_vocab) {
      throw std::runtime_error("token id " + item + " is outside the vocabulary of " + std::to_string(n_vocab));
    }
    tokens.push_back(value);
    start = end + 1;
  }
  return tokens;
}

llama_flash_attn_type parse_flash_attn(const std::string& mode) {
  if (mode == "on") return LLAMA_FLASH_ATTN_TYPE_ENABLED;
  if (mode == "off") return LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return LLAMA_FLASH_ATTN_TYPE_AUTO;
}

struct ModelDeleter {
  void operator()(llama_model* model) const { llama_model_free(model); }
};
struct ContextDeleter {
  void operator()(llama_context* ctx) const { llama_free(ctx); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelDeleter>;
using ContextPtr = std::unique_ptr<llama_context, ContextDeleter>;

ModelPtr load_model(const Options& opt) {
  // An empty device list keeps every weight and op on the CPU backend even if a GPU backend
  // library sits next to the CPU ones.
  static ggml_backend_dev_t no_devices[] = {nullptr};
  llama_model_params params = llama_model_default_params();
  params.devices = no_devices;
  params.n_gpu_layers = 0;
  params.use_extra_bufts = !opt.no_repack;  // extra buffer types = the CPU backend's weight repacking
  ModelPtr model(llama_model_load_from_file(opt.model.c_str(), params));
  if (!model) throw std::runtime_error("llama.cpp could not load " + opt.model + " (run with --verbose)");
  return model;
}

ContextPtr make_context(llama_model* model, const Options& opt, uint32_t n_prompt, int n_generate) {
  llama_context_params params = llama_context_default_params();
  params.n_ctx = n_prompt + static_cast<uint32_t>(n_generate);
  // The whole prompt is one ubatch (one graph run), as Channel takes it: llama.cpp picks kernels by
  // ubatch size (its CPU flash attention keeps Q and the V sum in f32 only from 64 queries on), so
  // a split prompt would be rounded differently.
  params.n_batch = n_prompt;
  params.n_ubatch = n_prompt;
  params.n_seq_max = 1;
  params.n_threads = opt.threads;
  params.n_threads_batch = opt.threads;
  params.flash_attn_type = parse_flash_attn(opt.flash_attn);
  params.type_k = params.type_v = opt.kv_type == "f32" ? GGML_TYPE_F32 : GGML_TYPE_F16;
  params.offload_kqv = false;
  params.op_offload = false;
  params.no_perf = true;
  ContextPtr ctx(llama_init_from_model(model, params));
  if (!ctx) throw std::runtime_error("llama.cpp could not create a context (run with --verbose)");
  return ctx;
}

// Decodes tokens at positions first_pos, first_pos+1, ...; all_logits asks for the logits of
// every position, otherwise only the last one's are kept.
void decode(llama_context* ctx, const std::vector<llama_token>& tokens, llama_pos first_pos, bool all_logits) {
  llama_batch batch = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = first_pos + static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = all_logits || i + 1 == tokens.size();
  }
  batch.n_tokens = static_cast<int32_t>(tokens.size());
  const int32_t status = llama_decode(ctx, batch);
  llama_batch_free(batch);
  if (status != 0) throw std::runtime_error("llama_decode failed with status " + std::to_string(status));
}

// Ties go to the lowest id (std::max_element keeps the first maximum), as in Channel's sampler.
llama_token argmax(const float* logits, int32_t n_vocab) {
  return static_cast<llama_token>(std::max_element(logits, logits + n_vocab) - logits);
}

void print_ids(const char* label, const std::vector<llama_token>& ids) {
  std::printf("%s:", label);
  for (llama_token id : ids) std::printf(" %d", id);
  std::printf("\n");
}

void run_eval(llama_context* ctx, const std::vector<llama_token>& tokens, int32_t n_vocab, const std::string& path) {
  decode(ctx, tokens, 0, true);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  std::vector<llama_token> argmaxes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* logits = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
    out.write(reinterpret_cast<const char*>(logits), static_cast<std::streamsize>(sizeof(float) * n_vocab));
    argmaxes.push_back(argmax(logits, n_vocab));
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
  print_ids("argmax", argmaxes);
}

// One greedy step's choice and how near it was to a tie: the runner-up (the best other id) and the
// gap between their logits over the row's root mean square, the scale on which the parity
// thresholds bound an engine's error (rel L2 = ||error|| / ||row||).
struct GreedyStep {
  llama_token chosen;
  llama_token runner_up;
  double margin;
};

// One pass: the best id and the best other one (each the first of equal logits, as argmax), and
// the row's sum of squares.
GreedyStep greedy_step(const float* logits, int32_t n_vocab) {
  llama_token chosen = 0;
  llama_token runner_up = -1;
  double sum_squares = static_cast<double>(logits[0]) * logits[0];
  for (int32_t id = 1; id < n_vocab; ++id) {
    sum_squares += static_cast<double>(logits[id]) * logits[id];
    if (logits[id] > logits[chosen]) {
      runner_up = chosen;
      chosen = id;
    } else if (runner_up < 0 || logits[id] > logits[runner_up]) {
      runner_up = id;
    }
  }
  if (runner_up < 0) return {chosen, chosen, 0.0};  // a vocabulary of one
  const double rms = std::sqrt(sum_squares / n_vocab);
  return {chosen, runner_up, rms > 0 ? (logits[chosen] - logits[runner_up]) / rms : 0.0};
}

void run_generate(llama_context* ctx, const std::vector<llama_token>& prompt, int32_t n_vocab, int n_generate) {
  decode(ctx, prompt, 0, false);
  std::vector<llama_token> generated, runners_up;
  std::vector<double> margins;
  for (int i = 0; i < n_generate; ++i) {
    const GreedyStep step = greedy_step(llama_get_logits_ith(ctx, -1), n_vocab);
    generated.push_back(step.chosen);
    runners_up.push_back(step.runner_up);
    margins.push_back(step.margin);
    if (i + 1 < n_generate) decode(ctx, {generated.back()}, static_cast<llama_pos>(prompt.size() + i), false);
  }
  print_ids("greedy", generated);
  print_ids("greedy_runner_up", runners_up);
  std::printf("greedy_margin:");
  for (double margin : margins) std::printf(" %.3e", margin);
  std::printf("\n");
}

void print_variants(const std::vector<oracle::CpuVariant>& supported, const oracle::CpuVariant& default_variant,
                    const oracle::CpuVariant& reference_variant) {
  for (const oracle::CpuVariant& v : supported) {
    std::string features;
    for (const std::string& f : v.features) features += (features.empty() ? "" : ",") + f;
    std::printf("variant: %s %d %s\n", v.name.c_str(), v.score, features.c_str());
  }
  std::printf("default: %s\nreference: %s\n", default_variant.name.c_str(), reference_variant.name.c_str());
}

const oracle::CpuVariant& choose_variant(const std::vector<oracle::CpuVariant>& supported,
                                         const oracle::CpuVariant& default_variant,
                                         const oracle::CpuVariant& reference_variant, const std::string& name) {
  if (name == "default") return default_variant;
  if (name == "reference") return reference_variant;
  for (const oracle::CpuVariant& v : supported) {
    if (v.name == name) return v;
  }
  throw std::runtime_error("llama.cpp CPU variant '" + name + "' is not installed or does not run on this CPU");
}

// The ggml type and the llama_ftype of a --type name (the five types Channel computes with).
struct QuantType {
  ggml_type type;
  llama_ftype ftype;
};
QuantType quant_type_named(const std::string& name) {
  if (name == "f32") return {GGML_TYPE_F32, LLAMA_FTYPE_ALL_F32};
  if (name == "f16") return {GGML_TYPE_F16, LLAMA_FTYPE_MOSTLY_F16};
  if (name == "bf16") return {GGML_TYPE_BF16, LLAMA_FTYPE_MOSTLY_BF16};
  if (name == "q8_0") return {GGML_TYPE_Q8_0, LLAMA_FTYPE_MOSTLY_Q8_0};
  if (name == "q4_0") return {GGML_TYPE_Q4_0, LLAMA_FTYPE_MOSTLY_Q4_0};
  throw std::runtime_error("unknown type '" + name + "' (use f32, f16, bf16, q8_0 or q4_0)");
}

void run_quantize(const Options& opt) {
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.nthread = opt.threads;
  params.ftype = quant_type_named(opt.quant_type).ftype;
  params.pure = true;
  if (!opt.output_type.empty()) params.output_tensor_type = quant_type_named(opt.output_type).type;
  if (!opt.token_embedding_type.empty()) params.token_embedding_type = quant_type_named(opt.token_embedding_type).type;
  if (llama_model_quantize(opt.model.c_str(), opt.quantized_out.c_str(), &params) != 0) {
    throw std::runtime_error("llama_model_quantize failed on " + opt.model);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Runs llama.cpp on exact token ids: the reference side of Channel's parity tests"};
  app.require_subcommand(1);
  auto add_common = [&opt](CLI::App* cmd) {
    cmd->add_option("-m,--model", opt.model, "GGUF model")->required()->check(CLI::ExistingFile);
    cmd->add_option("--tokens", opt.prompts, "comma-separated token ids, used as given (no BOS added); repeatable")
        ->required();
    cmd->add_option("-t,--threads", opt.threads, "CPU threads")->capture_default_str()->check(CLI::PositiveNumber);
    cmd->add_option("--flash-attn", opt.flash_attn, "flash attention (auto = llama.cpp's default)")
        ->capture_default_str()
        ->check(CLI::IsMember({"on", "off", "auto"}));
    cmd->add_option("--kv-type", opt.kv_type,
                    "KV cache type (f16 = llama.cpp's default; flash attention rounds f32 K/V to f16 anyway)")
        ->capture_default_str()
        ->check(CLI::IsMember({"f16", "f32"}));
    cmd->add_option("--cpu-variant", opt.cpu_variant,
                    "llama.cpp CPU variant to load: a name (zen4, haswell, ...), default or reference")
        ->capture_default_str();
    cmd->add_flag("--no-repack", opt.no_repack, "keep weights in their GGUF layout (no CPU_REPACK buffers)");
    cmd->add_flag("--verbose", opt.verbose, "show llama.cpp's log and the CPU features of the loaded backend");
  };
  CLI::App* eval = app.add_subcommand("eval", "all-position logits of each prompt, in one batch each");
  add_common(eval);
  eval->add_option("--logits-out", opt.logits_out, "raw LE f32 file, n_tokens x n_vocab (one per --tokens)")
      ->required();
  eval->add_option("--greedy", opt.n_generate, "then continue each prompt greedily for N tokens")
      ->check(CLI::NonNegativeNumber);
  CLI::App* variants = app.add_subcommand("variants", "the llama.cpp CPU variants this CPU runs");
  variants->add_flag("--verbose", opt.verbose, "show llama.cpp's log");
  CLI::App* quantize = app.add_subcommand("quantize", "llama_model_quantize, as llama-quantize --pure");
  quantize->add_option("-m,--model", opt.model, "GGUF model to quantize")->required()->check(CLI::ExistingFile);
  quantize->add_option("--out", opt.quantized_out, "quantized GGUF to write")->required();
  quantize->add_option("--type", opt.quant_type, "type of every quantizable matrix: f32 f16 bf16 q8_0 q4_0")->required();
  quantize->add_option("--output-type", opt.output_type, "output.weight's type (llama-quantize --output-tensor-type)");
  quantize->add_option("--token-embedding-type", opt.token_embedding_type,
                       "token_embd's and per_layer_token_embd's type (llama-quantize --token-embedding-type)");
  quantize->add_option("-t,--threads", opt.threads, "threads")->capture_default_str()->check(CLI::PositiveNumber);
  quantize->add_flag("--verbose", opt.verbose, "show llama.cpp's log");
  CLI11_PARSE(app, argc, argv);

  try {
    llama_log_set(log_filter, &opt.verbose);
    const std::vector<oracle::CpuVariant> supported = oracle::supported_cpu_variants(CHANNEL_PEER_LIBDIR);
    const oracle::CpuVariant& default_variant = oracle::default_cpu_variant(supported);
    const oracle::CpuVariant& reference_variant = oracle::reference_cpu_variant(supported);
    if (*variants) {
      print_variants(supported, default_variant, reference_variant);
      return 0;
    }
    if (*quantize) {
      run_quantize(opt);
      return 0;
    }
    const oracle::CpuVariant& chosen = choose_variant(supported, default_variant, reference_variant, opt.cpu_variant);
    oracle::load_cpu_variant(chosen);
    std::printf("cpu_variant: %s\n", chosen.name.c_str());
    llama_backend_init();

    if (opt.prompts.size() != opt.logits_out.size()) {
      throw std::runtime_error(std::to_string(opt.prompts.size()) + " --tokens but " +
                               std::to_string(opt.logits_out.size()) + " --logits-out: give one file per prompt");
    }
    ModelPtr model = load_model(opt);
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    if (opt.verbose) std::fprintf(stderr, "llama_oracle: %s\n", llama_print_system_info());
    for (size_t i = 0; i < opt.prompts.size(); ++i) {
      const std::vector<llama_token> tokens = parse_tokens(opt.prompts[i], n_vocab);
      const auto n_prompt = static_cast<uint32_t>(tokens.size());
      run_eval(make_context(model.get(), opt, n_prompt, 0).get(), tokens, n_vocab, opt.logits_out[i]);
      // A context of its own, with only the last position's logits asked for: the graph of a plain
      // generation, whose rounding the greedy comparison is about.
      if (opt.n_generate > 0) {
        run_generate(make_context(model.get(), opt, n_prompt, opt.n_generate).get(), tokens, n_vocab,
                     opt.n_generate);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llama_oracle: %s\n", e.what());
    return 1;
  }
  llama_backend_free();
  return 0;
}
