// `channel model info` and `channel model synth`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <memory>
#include <optional>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/synth_presets.h"
#include "model/synthesizer.h"
#include "tokenizer/tokenizer.h"

namespace channel::cli {
namespace {

// "none", or e.g. "128, 8 per token, FFN 704 each, in 30 of 30 layers (gate/up fused, output scales)".
std::string expert_summary(const Model& model) {
  const ModelConfig& c = model.config();
  if (!c.has_experts()) return "none";
  int moe_layers = 0;
  const ExpertWeights* first = nullptr;
  for (const LayerWeights& w : model.layers()) {
    if (!w.experts) continue;
    ++moe_layers;
    if (!first) first = &*w.experts;
  }
  std::string summary = fmt::format("{}, {} per token, FFN {} each, in {} of {} layers", c.n_expert, c.n_expert_used,
                                    c.n_ff_exp, moe_layers, c.n_layer);
  if (first) {
    summary += fmt::format(" (gate/up {}, {})", first->fused_gate_up() ? "fused" : "separate",
                           first->down_scale.empty() ? "no output scales" : "output scales");
  }
  return summary;
}

void print_model_info(const std::string& path) {
  auto model = Model::load(path);
  const ModelConfig& c = model->config();
  fmt::print("file:          {}\n", path);
  fmt::print("architecture:  {} ({})\n", c.arch_name, arch_display_name(c.arch));
  if (!c.model_name.empty()) fmt::print("name:          {}\n", c.model_name);
  fmt::print("layers:        {}\n", c.n_layer);
  fmt::print("embedding:     {}\n", c.n_embd);
  fmt::print("vocabulary:    {}\n", c.n_vocab);
  fmt::print("context:       {} (trained)\n", c.n_ctx_train);
  fmt::print("sliding window:{:>6}\n", c.sliding_window);
  fmt::print("query scale:   {:.6g}\n", c.query_scale);
  fmt::print("final softcap: {}\n", c.final_softcap > 0 ? fmt::format("{:g}", c.final_softcap) : "none");
  fmt::print("output:        {}\n", model->output_tied() ? "tied to token_embd" : "output.weight");
  fmt::print("per-layer emb: {}\n", c.has_per_layer_embeddings() ? fmt::format("{} per layer", c.n_embd_per_layer)
                                                                   : std::string("none"));
  fmt::print("KV layers:     {} of {}{}\n", c.n_kv_layers, c.n_layer,
             c.n_kv_layers == c.n_layer ? "" : fmt::format(" ({} KV-shared)", c.n_layer - c.n_kv_layers));
  fmt::print("experts:       {}\n", expert_summary(*model));
  fmt::print("\n{:>5} {:>8} {:>6} {:>8} {:>9} {:>6} {:>5} {:>10} {:>10} {:>6} {:>6} {:>5}\n", "layer", "type", "heads",
             "kv heads", "head dim", "ffn", "rot", "rope base", "rope scale", "v=k", "scale", "kv");
  for (int il = 0; il < c.n_layer; ++il) {
    const LayerConfig& l = c.layers[il];
    const LayerWeights& w = model->layers()[il];
    const std::string kv = c.owns_kv(il) ? "own" : fmt::format("={}", l.kv_layer);
    fmt::print("{:>5} {:>8} {:>6} {:>8} {:>9} {:>6} {:>5} {:>10g} {:>10g} {:>6} {:>6.3g} {:>5}\n", il,
               l.sliding ? "sliding" : "global", l.n_head, l.n_head_kv, l.head_dim, l.n_ff, l.n_rot, l.rope_base,
               l.rope_freq_scale, c.owns_kv(il) ? (w.wv ? "no" : "yes") : "-", w.output_scale, kv);
  }
  // Tensor types and sizes, summed by type.
  std::map<std::string, std::pair<int, uint64_t>> by_type;
  uint64_t total = 0;
  for (const auto& t : model->gguf().tensors()) {
    auto& [count, bytes] = by_type[std::string(ggml_type_traits(t.type).name)];
    ++count;
    bytes += t.n_bytes;
    total += t.n_bytes;
  }
  fmt::print("\ntensors: {} ({:.1f} MiB)\n", model->gguf().tensors().size(), static_cast<double>(total) / (1 << 20));
  for (const auto& [type, entry] : by_type) {
    fmt::print("  {:<5} {:>5} tensors {:>10.1f} MiB\n", type, entry.first, static_cast<double>(entry.second) / (1 << 20));
  }
}

void print_tensors(const std::string& path) {
  const GgufFile file = GgufFile::open(path);
  for (const auto& t : file.tensors()) {
    fmt::print("{:<40} {:<5} {:>20} {:>12}\n", t.name, ggml_type_traits(t.type).name, fmt::join(t.dims, "x"), t.n_bytes);
  }
}

struct SynthCliOptions {
  std::string preset;
  std::string arch;  // empty: gemma4, or the preset's
  std::string out;
  std::string vocab;
  std::string type;  // empty: f32, or the preset's
  std::string embedding_type;  // empty: --type, or the preset's
  uint64_t seed = 1;
  int layers = 0, embd = 0, heads = 0, kv_heads = 0, kv_heads_global = 0, head_dim = 0, head_dim_global = 0, ffn = 0,
      window = 0, period = 0, per_layer_embd = 0, kv_shared = 0, experts = 0, experts_used = 0, expert_ffn = 0;
  std::optional<float> rotary_fraction, rope_scaling;
  bool global_v = false, no_layer_output_scale = false;
  std::vector<std::string> script;
  std::string recall_memory, recall_answer;  // --recall-cue MEMORY ANSWER
};

GgmlType parse_type(const std::string& name) {
  const auto type = ggml_type_from_name(name);
  if (!type) fail("unknown weight type '{}' (use f32, f16, bf16, q8_0 or q4_0)", name);
  return *type;
}

// Without --preset: the defaults of --arch. With it: the preset's options, which the flags given
// then override, all but the architecture: a preset is a model of one architecture.
SynthOptions base_options(const SynthCliOptions& o) {
  if (!o.preset.empty()) {
    if (!o.arch.empty()) fail("--arch cannot be combined with --preset: preset '{}' sets the architecture", o.preset);
    return synth_preset(o.preset);
  }
  const std::string arch = o.arch.empty() ? "gemma4" : o.arch;
  if (arch != "gemma3" && arch != "gemma4") fail("--arch must be gemma3 or gemma4, not '{}'", arch);
  return default_synth_options(arch == "gemma3" ? ModelArch::Gemma3 : ModelArch::Gemma4);
}

void run_synth(const SynthCliOptions& o) {
  SynthOptions s = base_options(o);
  s.vocab_path = o.vocab;
  s.seed = o.seed;
  if (!o.type.empty()) s.weight_type = parse_type(o.type);
  // Without a preset the embedding takes --type; a preset keeps its Q8_0 embedding.
  if (!o.embedding_type.empty()) {
    s.embedding_type = parse_type(o.embedding_type);
  } else if (o.preset.empty()) {
    s.embedding_type = s.weight_type;
  }
  const auto set = [](int value, int& field) {
    if (value != 0) field = value;
  };
  set(o.layers, s.n_layer);
  set(o.embd, s.n_embd);
  set(o.heads, s.n_head);
  set(o.kv_heads, s.n_head_kv);
  set(o.kv_heads_global, s.n_head_kv_global);
  set(o.head_dim, s.head_dim);
  set(o.head_dim_global, s.head_dim_global);
  set(o.ffn, s.n_ff);
  set(o.window, s.sliding_window);
  set(o.period, s.sliding_period);
  set(o.per_layer_embd, s.n_embd_per_layer);
  set(o.kv_shared, s.n_kv_shared);
  set(o.experts, s.n_expert);
  set(o.experts_used, s.n_expert_used);
  set(o.expert_ffn, s.n_ff_exp);
  if (s.n_expert > 0 && s.n_ff_exp == 0) s.n_ff_exp = s.n_ff / 2;
  if (s.arch == ModelArch::Gemma3) {
    // Gemma 3 has one head geometry for all layers.
    if (o.kv_heads_global || o.head_dim_global) fail("--kv-heads-global and --head-dim-global apply to gemma4 only");
    s.n_head_kv_global = s.n_head_kv;
    s.head_dim_global = s.head_dim;
    if (o.rotary_fraction || o.global_v || o.no_layer_output_scale || o.per_layer_embd || o.kv_shared || o.experts ||
        o.experts_used || o.expert_ffn) {
      fail("--rotary-fraction, --global-v, --no-layer-output-scale, --ple, --kv-shared and the expert flags apply to "
           "gemma4 only");
    }
  } else if (o.rope_scaling) {
    fail("--rope-scaling applies to gemma3 only");
  }
  if (o.rotary_fraction) s.rotary_fraction = *o.rotary_fraction;
  if (o.rope_scaling) s.rope_scaling_factor = *o.rope_scaling;
  if (o.global_v) s.global_v_equals_k = false;
  if (o.no_layer_output_scale) s.layer_output_scale = false;
  if (!o.script.empty() || !o.recall_memory.empty()) {
    // Script texts are tokenized with the vocabulary's own tokenizer, special tokens included.
    const Tokenizer tokenizer = Tokenizer::from_gguf(GgufFile::open(o.vocab));
    const auto encode = [&tokenizer](const std::string& text) {
      return tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
    };
    for (const std::string& text : o.script) s.script.push_back(encode(text));
    if (!o.recall_memory.empty()) {
      const auto one_token = [&](const std::string& text) {
        const std::vector<int32_t> ids = encode(text);
        if (ids.size() != 1) fail("--recall-cue: '{}' is {} tokens, not one", text, ids.size());
        return ids.front();
      };
      s.recall_cue = SynthOptions::RecallCue{one_token(o.recall_memory), one_token(o.recall_answer)};
    }
  }
  synthesize_model(s, o.out);
  fmt::print(stderr, "wrote {} ({}{} layers, embedding {}, {} weights, {} embedding, seed {})\n", o.out,
             o.preset.empty() ? "" : fmt::format("preset {}: ", o.preset), s.n_layer, s.n_embd,
             ggml_type_traits(s.weight_type).name, ggml_type_traits(s.embedding_type).name, s.seed);
}

}  // namespace

void register_model_commands(CLI::App& app) {
  CLI::App* model = app.add_subcommand("model", "Inspect or make model files");
  model->require_subcommand(1);

  auto info_path = std::make_shared<std::string>();
  auto list_tensors = std::make_shared<bool>(false);
  CLI::App* info = model->add_subcommand("info", "Architecture, geometry, per-layer types, tensor types and sizes");
  add_model_option(*info, "model", *info_path)->required();
  info->add_flag("--tensors", *list_tensors, "also list every tensor (name, type, shape, bytes)");
  info->callback([info_path, list_tensors] {
    print_model_info(*info_path);
    if (*list_tensors) print_tensors(*info_path);
  });

  auto o = std::make_shared<SynthCliOptions>();
  CLI::App* synth = model->add_subcommand(
      "synth",
      "Write a random-weight gemma3/gemma4 GGUF (for tests, or of a real Gemma size for speed benchmarks), with "
      "the vocabulary of another GGUF");
  synth->add_option("--preset", o->preset,
                    fmt::format("a real Gemma geometry, for speed benchmarks: {}. Q4_0 matrices and a Q8_0 "
                                "embedding; each layer type's matrices are drawn once and stored in every layer of "
                                "that type (the bytes per token stay the real model's). Flags given with it override "
                                "the preset's values, except --arch",
                                fmt::join(synth_preset_names(), ", ")))
      ->type_name("NAME");
  synth->add_option("--arch", o->arch, "gemma3 or gemma4 (default gemma4; not with --preset)");
  synth->add_option("--vocab", o->vocab, "GGUF to copy the tokenizer from (e.g. llama.cpp's ggml-vocab-gemma-4.gguf)")
      ->required()
      ->check(CLI::ExistingFile);
  synth->add_option("-o,--out", o->out, "output GGUF path")->required();
  synth->add_option("--type", o->type,
                    "weight type of attention and FFN matrices: f32 f16 bf16 q8_0 q4_0 (default f32; with --preset "
                    "q4_0)");
  synth->add_option("--embedding-type", o->embedding_type,
                    "type of token_embd (tied output); default: --type (with --preset: q8_0)");
  synth->add_option("--seed", o->seed, "random seed")->capture_default_str();
  synth->add_option("--layers", o->layers, "number of layers (default 6)");
  synth->add_option("--embd", o->embd, "embedding size (default 128)");
  synth->add_option("--heads", o->heads, "query heads (default 4)");
  synth->add_option("--kv-heads", o->kv_heads, "KV heads of sliding layers (gemma3: all layers; default 2)");
  synth->add_option("--kv-heads-global", o->kv_heads_global, "gemma4: KV heads of global layers (default 1)");
  synth->add_option("--head-dim", o->head_dim, "head size of sliding layers (gemma3: all layers; default 32)");
  synth->add_option("--head-dim-global", o->head_dim_global, "gemma4: head size of global layers (default 64)");
  synth->add_option("--ffn", o->ffn, "FFN hidden size (default 256)");
  synth->add_option("--window", o->window, "sliding window (default 32)");
  synth->add_option("--period", o->period, "every N-th layer is global (default 3; gemma4's last layer is always global)");
  synth->add_option("--rotary-fraction", o->rotary_fraction,
                    "gemma4: share of the global layers' frequency pairs that RoPE rotates, in (0, 1] (default 0.25; "
                    "1: full rotation)");
  synth->add_flag("--global-v", o->global_v, "gemma4: global layers get their own attn_v (default: V = K, no attn_v)");
  synth->add_flag("--no-layer-output-scale", o->no_layer_output_scale,
                  "gemma4: no layer_output_scale tensors (default: a random scale per layer)");
  synth->add_option("--ple", o->per_layer_embd,
                    "gemma4 E-model: per-layer embeddings of this width (embedding_length_per_layer_input; default 0: "
                    "none)");
  synth->add_option("--kv-shared", o->kv_shared,
                    "gemma4 E-model: the last N layers reuse earlier layers' KV (attention.shared_kv_layers; they "
                    "have no attn_k/attn_v and a double-wide FFN, as Gemma 4 E2B; default 0). Layer "
                    "layers-N-1 must be global and layers-N-2 sliding where shared layers of that type exist");
  synth->add_option("--experts", o->experts,
                    "gemma4 mixture of experts (26B-A4B's layout): every layer routes each token to --experts-used "
                    "of this many experts beside its dense FFN (expert_count; default 0: a dense model)");
  synth->add_option("--experts-used", o->experts_used, "gemma4 MoE: experts per token (expert_used_count)");
  synth->add_option("--expert-ffn", o->expert_ffn,
                    "gemma4 MoE: hidden size of each expert (expert_feed_forward_length; default half of --ffn)");
  synth->add_option("--rope-scaling", o->rope_scaling,
                    "gemma3: linear RoPE scaling factor of global layers (default 8; 0: none, as Gemma 3 1B)");
  synth->add_option("--script", o->script,
                    "make the model continue each token of TEXT with the next one, far ahead of all others "
                    "(repeatable; special tokens allowed; each token may have one successor). Such a model has no "
                    "other skill: it is for end-to-end tests of turn logic")
      ->type_name("TEXT");
  synth->add_option_function<std::vector<std::string>>(
            "--recall-cue",
            [o](const std::vector<std::string>& cue) {
              o->recall_memory = cue.at(0);
              o->recall_answer = cue.at(1);
            },
            "with --script: make ANSWER (one token) the model's next token wherever the KV of MEMORY (one token, "
            "without a successor in the script) is visible to the last global layer, in the stream or recalled "
            "into the recall slots, and out of reach elsewhere: for end-to-end tests of episodic memory")
      ->expected(2)
      ->type_name("TOKEN");
  synth->footer("With --preset, the defaults of the geometry flags above are the preset's.");
  synth->callback([o] { run_synth(*o); });
}

}  // namespace channel::cli
