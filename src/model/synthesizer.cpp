#include "model/synthesizer.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "core/error.h"
#include "core/split_mix.h"
#include "core/thread_pool.h"
#include "model/gguf.h"
#include "model/quantize.h"

namespace channel {
namespace {

uint64_t name_hash(std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

class ModelWriter {
 public:
  ModelWriter(GgufWriter& writer, uint64_t seed) : writer_(writer), seed_(seed) {}

  // Values are drawn from a stream seeded by the model seed and the tensor name only, so every
  // weight type encodes the same underlying values.
  std::vector<float> values(const std::string& name, int64_t n, const std::function<float(SplitMix64&)>& draw) {
    SplitMix64 random(seed_ ^ name_hash(name));
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = draw(random);
    return v;
  }

  // Changes the drawn values of one row (`cols` values) before they are stored.
  using RowEdit = std::function<void(int64_t row, std::span<float> values)>;

  // A matrix of normal values drawn from the stream of `drawn_as` (default: its own name), as
  // values() would draw them; matrices drawn as one name share their encoded bytes.
  void matrix(const std::string& name, GgmlType type, int64_t cols, int64_t rows, float stddev,
              const RowEdit& edit = {}, const std::string& drawn_as = {}) {
    const std::string& source = drawn_as.empty() ? name : drawn_as;
    auto [it, inserted] = encoded_.try_emplace(source);
    if (inserted) it->second = encode(source, type, cols, rows, stddev, edit);
    writer_.add_shared_tensor(name, type, {cols, rows}, it->second);
  }

  // Norm weights as Gemma stores them in GGUF (effective scale, around `center`).
  // n_stacked matrices of `rows` x `cols` in one 3-D tensor (an MoE layer's experts), drawn as
  // one matrix of n_stacked * rows rows.
  void stacked_matrices(const std::string& name, GgmlType type, int64_t cols, int64_t rows, int64_t n_stacked,
                        float stddev) {
    writer_.add_shared_tensor(name, type, {cols, rows, n_stacked}, encode(name, type, cols, rows * n_stacked, stddev, {}));
  }

  void norm(const std::string& name, int64_t n, float center = 1.0f) {
    const auto v = values(name, n, [center](SplitMix64& r) { return center * (1.0f + 0.1f * r.normal()); });
    writer_.add_tensor(name, GgmlType::F32, {n}, quantize_row(GgmlType::F32, v));
  }

  void f32(const std::string& name, std::vector<float> v) {
    const auto n = static_cast<int64_t>(v.size());
    writer_.add_tensor(name, GgmlType::F32, {n}, quantize_row(GgmlType::F32, v));
  }

 private:
  // Each thread draws its own rows, skipping ahead in the one stream to its first row, and
  // encodes them row by row: the bytes do not depend on the thread count, and no f32 copy of a
  // whole matrix (4 GB for a large embedding) is ever held.
  std::shared_ptr<const std::vector<uint8_t>> encode(const std::string& name, GgmlType type, int64_t cols,
                                                     int64_t rows, float stddev, const RowEdit& edit) {
    const size_t row_bytes = ggml_row_bytes(type, cols);
    auto bytes = std::make_shared<std::vector<uint8_t>>(row_bytes * static_cast<size_t>(rows));
    pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
      SplitMix64 random(seed_ ^ name_hash(name));
      random.skip_normals(static_cast<uint64_t>(begin * cols));
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = begin; r < end; ++r) {
        for (auto& x : row) x = random.normal() * stddev;
        if (edit) edit(r, row);
        const std::vector<uint8_t> encoded = quantize_row(type, row);
        std::copy(encoded.begin(), encoded.end(), bytes->begin() + static_cast<ptrdiff_t>(r * row_bytes));
      }
    });
    return bytes;
  }

  GgufWriter& writer_;
  uint64_t seed_;
  ThreadPool pool_;
  std::map<std::string, std::shared_ptr<const std::vector<uint8_t>>> encoded_;  // by the name drawn as
};

bool is_global_layer(const SynthOptions& o, int il) {
  if (o.arch == ModelArch::Gemma4 && il == o.n_layer - 1) return true;  // Gemma 4 ends on a global layer
  return il % o.sliding_period == o.sliding_period - 1;
}

int first_kv_shared_layer(const SynthOptions& o) { return o.n_layer - o.n_kv_shared; }
bool is_kv_shared_layer(const SynthOptions& o, int il) { return il >= first_kv_shared_layer(o); }

// llama.cpp gives a KV-shared sliding layer the KV of layer first-2 and a global one that of
// layer first-1 (first: the first shared layer), so those must be sliding and global.
void check_e_model_geometry(const SynthOptions& o) {
  if (o.n_embd_per_layer < 0) fail("synth: per-layer embedding width must not be negative (0: none)");
  if (o.n_kv_shared < 0) fail("synth: KV-shared layers must not be negative (0: none)");
  if (o.n_embd_per_layer == 0 && o.n_kv_shared == 0) return;
  if (o.arch != ModelArch::Gemma4) fail("synth: per-layer embeddings and KV-shared layers are gemma4 features");
  if (o.n_kv_shared == 0) return;
  const int first = first_kv_shared_layer(o);
  if (first < 2) fail("synth: {} KV-shared layers of {} leave fewer than 2 layers with KV", o.n_kv_shared, o.n_layer);
  bool any_sliding = false, any_global = false;
  for (int il = first; il < o.n_layer; ++il) (is_global_layer(o, il) ? any_global : any_sliding) = true;
  if (any_global && !is_global_layer(o, first - 1)) {
    fail("synth: with {} KV-shared layers, layer {} (whose KV the shared global layers reuse) must be global; "
         "choose --kv-shared or --period so that it is",
         o.n_kv_shared, first - 1);
  }
  if (any_sliding && is_global_layer(o, first - 2)) {
    fail("synth: with {} KV-shared layers, layer {} (whose KV the shared sliding layers reuse) must be sliding; "
         "choose --kv-shared or --period so that it is",
         o.n_kv_shared, first - 2);
  }
}

void check_expert_geometry(const SynthOptions& o) {
  if (o.n_expert == 0 && o.n_expert_used == 0 && o.n_ff_exp == 0) return;
  if (o.arch != ModelArch::Gemma4) fail("synth: experts are a gemma4 feature");
  if (o.n_expert <= 0 || o.n_expert_used <= 0 || o.n_expert_used > o.n_expert) {
    fail("synth: {} experts with {} per token: need 1 <= experts used <= experts", o.n_expert, o.n_expert_used);
  }
  if (o.n_ff_exp <= 0) fail("synth: the expert FFN size must be positive (got {})", o.n_ff_exp);
  if (!o.script.empty()) fail("synth: a scripted model has no experts");
}

void check_geometry(const SynthOptions& o) {
  auto positive = [](int v, const char* what) {
    if (v <= 0) fail("synth: {} must be positive (got {})", what, v);
  };
  positive(o.n_layer, "layers");
  positive(o.n_embd, "embedding size");
  positive(o.n_head, "heads");
  positive(o.n_head_kv, "KV heads");
  positive(o.head_dim, "head size");
  positive(o.n_ff, "FFN size");
  positive(o.sliding_window, "sliding window");
  positive(o.sliding_period, "sliding period");
  if (o.n_head % o.n_head_kv != 0) fail("synth: heads ({}) must be a multiple of KV heads ({})", o.n_head, o.n_head_kv);
  if (o.head_dim % 2 != 0) fail("synth: head size must be even");
  if (o.rope_scaling_factor < 0.0f) fail("synth: RoPE scaling factor must not be negative (0: none)");
  if (o.arch == ModelArch::Gemma4) {
    positive(o.n_head_kv_global, "global KV heads");
    positive(o.head_dim_global, "global head size");
    if (o.n_head % o.n_head_kv_global != 0) fail("synth: heads must be a multiple of global KV heads");
    if (o.head_dim_global % 2 != 0) fail("synth: global head size must be even");
    if (!(o.rotary_fraction > 0.0f && o.rotary_fraction <= 1.0f)) fail("synth: rotary fraction must be in (0, 1]");
  }
  check_e_model_geometry(o);
  check_expert_geometry(o);
  // Quantized rows hold whole blocks of 32: every matrix row length must be a multiple of it.
  std::vector<GgmlType> types = {o.weight_type, o.embedding_type};
  for (const auto& [matrix, type] : o.layer_matrix_types) types.push_back(type);
  for (GgmlType type : types) {
    const int64_t block = ggml_type_traits(type).block_elements;
    for (int64_t cols : {int64_t{o.n_embd}, int64_t{o.n_ff}, int64_t{o.n_head} * o.head_dim,
                         int64_t{o.n_head} * o.head_dim_global, int64_t{o.n_embd_per_layer}, int64_t{o.n_ff_exp}}) {
      if (cols % block != 0) {
        fail("synth: a row of {} values cannot be stored as {} (blocks of {}); choose sizes that are multiples of {}",
             cols, ggml_type_traits(type).name, block, block);
      }
    }
  }
}

int layer_ffn_size(const SynthOptions& o, int il) { return is_kv_shared_layer(o, il) ? 2 * o.n_ff : o.n_ff; }

// The layer whose names layer `il`'s matrices are drawn as: its own, or with
// share_layer_matrices the first layer of its type (sliding or global, KV-shared or not).
int matrix_source_layer(const SynthOptions& o, int il) {
  if (!o.share_layer_matrices) return il;
  const auto kind = [&o](int layer) { return std::pair(is_global_layer(o, layer), is_kv_shared_layer(o, layer)); };
  int first = 0;
  while (kind(first) != kind(il)) ++first;
  return first;
}

// Where a recall cue lives (SynthOptions::recall_cue): two embedding axes after the script's and
// the layer whose attention finds the memory token.
struct RecallCueLayout {
  int32_t memory = -1, answer = -1;
  int64_t memory_axis = 0;  // only the memory token's embedding is non-zero here
  int64_t answer_axis = 0;  // no embedding is; the layer writes here, the answer's row reads it
  int layer = 0;            // the last global layer: the one layer type that reads recall slots
};

// The answer's output weight on its axis. The layers' output scales (0.5 to 1.5) can shrink the
// attention's contribution against the token's own axis by up to 2, and the answer must still be
// ahead of the scripted successor then.
constexpr float kRecallAnswerWeight = 4.0f;

std::optional<RecallCueLayout> recall_cue_layout(const SynthOptions& o, const std::map<int32_t, int32_t>& successors,
                                                 int64_t n_vocab) {
  if (!o.recall_cue) return std::nullopt;
  const auto [memory, answer] = *o.recall_cue;
  // Without a script the layers add random values everywhere, and the answer would not depend
  // on the memory token alone.
  if (successors.empty()) fail("synth: a recall cue needs a script");
  for (int32_t token : {memory, answer}) {
    if (token < 0 || token >= n_vocab) fail("synth: recall cue token {} is outside the vocabulary", token);
  }
  if (memory == answer) fail("synth: the recall cue's memory and answer tokens must differ");
  if (successors.contains(memory)) {
    fail("synth: the recall cue's memory token {} has a successor in the script; its axis is the cue's", memory);
  }
  if (successors.size() + 2 > static_cast<size_t>(o.n_embd)) {
    fail("synth: the script's {} tokens and a recall cue's 2 axes need an embedding size of at least {}",
         successors.size(), successors.size() + 2);
  }
  // Shared matrices would carry the cue layer's weights into other layers; KV-shared layers
  // have no keys of their own.
  if (o.share_layer_matrices || o.n_kv_shared > 0) fail("synth: a recall cue needs layers of their own, with KV");
  int layer = o.n_layer - 1;
  while (layer >= 0 && !is_global_layer(o, layer)) --layer;
  if (layer < 0) fail("synth: a recall cue needs a global layer");
  const auto axis = static_cast<int64_t>(successors.size());
  return RecallCueLayout{memory, answer, axis, axis + 1, layer};
}

uint32_t file_type_of(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q8_0: return 7;
    case GgmlType::BF16: return 32;
  }
  return 0;
}

int64_t vocabulary_size(const GgufFile& vocab) {
  const GgufValue* tokens = vocab.find("tokenizer.ggml.tokens");
  if (!tokens) fail("{}: no tokenizer.ggml.tokens: not a vocabulary GGUF", vocab.origin());
  return static_cast<int64_t>(tokens->as_array("tokenizer.ggml.tokens").elements.size());
}

void set_metadata(const SynthOptions& o, const GgufFile& vocab, GgufWriter& w) {
  const bool gemma4 = o.arch == ModelArch::Gemma4;
  const std::string arch = gemma4 ? "gemma4" : "gemma3";
  const auto key = [&arch](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };
  w.set("general.architecture", GgufValue::string(arch));
  w.set("general.name", GgufValue::string(o.name));
  w.set("general.file_type", GgufValue::u32(file_type_of(o.weight_type)));
  w.set("general.quantization_version", GgufValue::u32(2));
  w.set(key("context_length"), GgufValue::u32(8192));
  w.set(key("embedding_length"), GgufValue::u32(o.n_embd));
  w.set(key("block_count"), GgufValue::u32(o.n_layer));
  if (o.n_kv_shared > 0) {
    std::vector<GgufValue> ffn;
    for (int il = 0; il < o.n_layer; ++il) ffn.push_back(GgufValue::i32(layer_ffn_size(o, il)));
    w.set(key("feed_forward_length"), GgufValue::array(GgufValueType::INT32, std::move(ffn)));
  } else {
    w.set(key("feed_forward_length"), GgufValue::u32(o.n_ff));
  }
  w.set(key("attention.head_count"), GgufValue::u32(o.n_head));
  w.set(key("attention.layer_norm_rms_epsilon"), GgufValue::f32(1e-6f));
  w.set(key("attention.sliding_window"), GgufValue::u32(o.sliding_window));

  if (gemma4) {
    std::vector<GgufValue> kv_heads, pattern;
    for (int il = 0; il < o.n_layer; ++il) {
      const bool global = is_global_layer(o, il);
      kv_heads.push_back(GgufValue::i32(global ? o.n_head_kv_global : o.n_head_kv));
      pattern.push_back(GgufValue::boolean(!global));
    }
    w.set(key("attention.head_count_kv"), GgufValue::array(GgufValueType::INT32, std::move(kv_heads)));
    w.set(key("attention.sliding_window_pattern"), GgufValue::array(GgufValueType::BOOL, std::move(pattern)));
    w.set(key("attention.key_length"), GgufValue::u32(o.head_dim_global));
    w.set(key("attention.value_length"), GgufValue::u32(o.head_dim_global));
    w.set(key("attention.key_length_swa"), GgufValue::u32(o.head_dim));
    w.set(key("attention.value_length_swa"), GgufValue::u32(o.head_dim));
    w.set(key("attention.shared_kv_layers"), GgufValue::u32(o.n_kv_shared));
    w.set(key("embedding_length_per_layer_input"), GgufValue::u32(o.n_embd_per_layer));
    if (o.n_expert > 0) {
      w.set(key("expert_count"), GgufValue::u32(o.n_expert));
      w.set(key("expert_used_count"), GgufValue::u32(o.n_expert_used));
      w.set(key("expert_feed_forward_length"), GgufValue::u32(o.n_ff_exp));
    }
    w.set(key("final_logit_softcapping"), GgufValue::f32(30.0f));
    w.set(key("rope.dimension_count"), GgufValue::u32(o.head_dim_global));
    w.set(key("rope.dimension_count_swa"), GgufValue::u32(o.head_dim));
    w.set(key("rope.freq_base"), GgufValue::f32(1e6f));
    w.set(key("rope.freq_base_swa"), GgufValue::f32(1e4f));
  } else {
    w.set(key("attention.head_count_kv"), GgufValue::u32(o.n_head_kv));
    w.set(key("attention.sliding_window_pattern"), GgufValue::u32(o.sliding_period));
    w.set(key("attention.key_length"), GgufValue::u32(o.head_dim));
    w.set(key("attention.value_length"), GgufValue::u32(o.head_dim));
    w.set(key("rope.freq_base"), GgufValue::f32(1e6f));
    if (o.rope_scaling_factor > 0.0f) {
      w.set(key("rope.scaling.type"), GgufValue::string("linear"));
      w.set(key("rope.scaling.factor"), GgufValue::f32(o.rope_scaling_factor));
    }
  }
  for (const auto& [k, v] : vocab.metadata()) {
    if (k.starts_with("tokenizer.")) w.set(k, v);
  }
}

// One MoE layer's tensors as llama.cpp's gemma4 converter writes them. The router's logits
// have a spread of about 4 (its input has unit norm times router.scale), so that routing
// decisions are rarely near-ties; the router stays F32 as llama.cpp's quantizer leaves it.
void add_experts(ModelWriter& model, const SynthOptions& o, int il, float in_std) {
  const auto name = [il](const char* t, const char* kind = "weight") { return fmt::format("blk.{}.{}.{}", il, t, kind); };
  model.norm(name("pre_ffw_norm_2"), o.n_embd);
  model.norm(name("post_ffw_norm_1"), o.n_embd);
  model.norm(name("post_ffw_norm_2"), o.n_embd);
  model.matrix(name("ffn_gate_inp"), GgmlType::F32, o.n_embd, o.n_expert, 4.0f);
  model.norm(name("ffn_gate_inp", "scale"), o.n_embd);
  model.stacked_matrices(name("ffn_gate_up_exps"), o.weight_type, o.n_embd, 2 * int64_t{o.n_ff_exp}, o.n_expert, in_std);
  model.stacked_matrices(name("ffn_down_exps"), o.weight_type, o.n_ff_exp, o.n_embd, o.n_expert,
                         1.0f / std::sqrt(static_cast<float>(o.n_ff_exp)));
  model.f32(name("ffn_down_exps", "scale"), model.values(name("ffn_down_exps", "scale"), o.n_expert, [](SplitMix64& r) {
    return static_cast<float>(0.5 + r.uniform());
  }));
}

}  // namespace

std::map<int32_t, int32_t> script_successors(const std::vector<std::vector<int32_t>>& script, int64_t n_vocab,
                                             int n_embd) {
  std::map<int32_t, int32_t> successors;
  for (const auto& sequence : script) {
    for (int32_t token : sequence) {
      if (token < 0 || token >= n_vocab) fail("synth: script token {} is outside the vocabulary", token);
    }
    for (size_t i = 0; i + 1 < sequence.size(); ++i) {
      const auto [it, inserted] = successors.emplace(sequence[i], sequence[i + 1]);
      if (!inserted && it->second != sequence[i + 1]) {
        fail("synth: script token {} is followed by {} in one place and by {} in another; each token can have "
             "one successor only",
             sequence[i], it->second, sequence[i + 1]);
      }
    }
  }
  if (successors.size() > static_cast<size_t>(n_embd)) {
    fail("synth: the script has {} tokens with a successor, more than the embedding size {}", successors.size(),
         n_embd);
  }
  return successors;
}

SynthOptions default_synth_options(ModelArch arch) {
  SynthOptions o;
  o.arch = arch;
  if (arch == ModelArch::Gemma3) {
    o.n_head_kv_global = o.n_head_kv;
    o.head_dim_global = o.head_dim;
  }
  return o;
}

void synthesize_model(const SynthOptions& o, const std::string& out_path) {
  check_geometry(o);
  const GgufFile vocab = GgufFile::open(o.vocab_path);
  const int64_t n_vocab = vocabulary_size(vocab);
  const bool gemma4 = o.arch == ModelArch::Gemma4;
  GgufWriter w;
  set_metadata(o, vocab, w);

  // Embeddings are small next to what the layers add to the residual stream (RMS 0.5 after the
  // sqrt(n_embd) input scale against ~1 per block), so the tied output does not simply predict
  // the input token again; the final norm's large weights give logits a spread of a few units,
  // so argmax decisions are rarely near-ties.
  //
  // A scripted model gives each scripted token its own embedding axis (one-hot), adds nothing in
  // the layers (zero post-norms), and has an untied output whose row for a successor points
  // along its predecessor's axis: the logit of the scripted successor is ~64 before the final
  // softcap, every other logit is within a unit or so of zero.
  const std::map<int32_t, int32_t> successors = script_successors(o.script, n_vocab, o.n_embd);
  const bool scripted = !successors.empty();
  std::map<int64_t, int64_t> axis_of_token;                      // scripted token -> its axis
  std::map<int64_t, std::vector<int64_t>> axes_of_predecessors;  // successor -> its predecessors' axes
  for (const auto& [token, next] : successors) {
    const auto axis = static_cast<int64_t>(axis_of_token.size());
    axis_of_token[token] = axis;
    axes_of_predecessors[next].push_back(axis);
  }
  const std::optional<RecallCueLayout> cue = recall_cue_layout(o, successors, n_vocab);
  const auto one_hot = [](std::span<float> v, int64_t axis) {
    std::fill(v.begin(), v.end(), 0.0f);
    v[axis] = 1.0f;
  };
  ModelWriter model(w, o.seed);
  model.matrix("token_embd.weight", o.embedding_type, o.n_embd, n_vocab, 0.5f / std::sqrt(static_cast<float>(o.n_embd)),
               [&](int64_t row, std::span<float> v) {
                 if (cue && row == cue->memory) return one_hot(v, cue->memory_axis);
                 if (const auto it = axis_of_token.find(row); it != axis_of_token.end()) return one_hot(v, it->second);
                 if (cue) v[cue->memory_axis] = v[cue->answer_axis] = 0.0f;
               });
  if (scripted) {
    model.matrix("output.weight", o.embedding_type, o.n_embd, n_vocab, 0.002f, [&](int64_t row, std::span<float> v) {
      if (const auto it = axes_of_predecessors.find(row); it != axes_of_predecessors.end()) {
        for (int64_t axis : it->second) v[axis] = 1.0f;
      }
      if (cue && row == cue->answer) v[cue->answer_axis] = kRecallAnswerWeight;
    });
  }
  if (gemma4) {
    // Proportional RoPE as llama.cpp encodes it: factor 1 for rotated pairs, 1e30 (frequency ~0,
    // an identity rotation) for the rest.
    const int pairs = o.head_dim_global / 2;
    const int rotated = std::max(1, static_cast<int>(std::lround(pairs * o.rotary_fraction)));
    std::vector<float> factors(pairs);
    for (int i = 0; i < pairs; ++i) factors[i] = i < rotated ? 1.0f : 1e30f;
    model.f32("rope_freqs.weight", std::move(factors));
  }
  model.norm("output_norm.weight", o.n_embd, 8.0f);
  if (o.n_embd_per_layer > 0) {
    // Each part of a per-layer input (the token's row scaled by sqrt(width), the normed
    // projection) is of unit RMS.
    const int64_t all_layers = int64_t{o.n_layer} * o.n_embd_per_layer;
    model.matrix("per_layer_token_embd.weight", o.embedding_type, all_layers, n_vocab,
                 1.0f / std::sqrt(static_cast<float>(o.n_embd_per_layer)));
    model.matrix("per_layer_model_proj.weight", o.weight_type, o.n_embd, all_layers,
                 1.0f / std::sqrt(static_cast<float>(o.n_embd)));
    model.norm("per_layer_proj_norm.weight", o.n_embd_per_layer);
  }

  for (int il = 0; il < o.n_layer; ++il) {
    const bool global = is_global_layer(o, il);
    const int head_dim = gemma4 && global ? o.head_dim_global : o.head_dim;
    const int n_head_kv = gemma4 && global ? o.n_head_kv_global : o.n_head_kv;
    const int64_t q_width = int64_t{o.n_head} * head_dim;
    const int64_t kv_width = int64_t{n_head_kv} * head_dim;
    const float in_std = 1.0f / std::sqrt(static_cast<float>(o.n_embd));
    const auto tensor_name = [](int layer, const char* t) { return fmt::format("blk.{}.{}.weight", layer, t); };
    const auto name = [&](const char* t) { return tensor_name(il, t); };
    const auto matrix = [&](const char* t, int64_t cols, int64_t rows, float stddev,
                            const ModelWriter::RowEdit& edit = {}) {
      const auto type = o.layer_matrix_types.find(t);
      model.matrix(name(t), type == o.layer_matrix_types.end() ? o.weight_type : type->second, cols, rows, stddev,
                   edit, tensor_name(matrix_source_layer(o, il), t));
    };
    const bool writes_kv = !is_kv_shared_layer(o, il);
    const int64_t n_ff = layer_ffn_size(o, il);
    // The recall cue's layer (see SynthOptions::recall_cue): zero queries, keys and values read
    // the memory axis only, the output writes the answer axis only.
    const bool cue_layer = cue && il == cue->layer;
    const ModelWriter::RowEdit zero = [](int64_t, std::span<float> v) { std::fill(v.begin(), v.end(), 0.0f); };
    const ModelWriter::RowEdit read_memory = [&](int64_t, std::span<float> v) { one_hot(v, cue->memory_axis); };
    const ModelWriter::RowEdit write_answer = [&](int64_t row, std::span<float> v) {
      std::fill(v.begin(), v.end(), row == cue->answer_axis ? 1.0f : 0.0f);
    };
    model.norm(name("attn_norm"), o.n_embd);
    matrix("attn_q", o.n_embd, q_width, in_std, cue_layer ? zero : ModelWriter::RowEdit{});
    const ModelWriter::RowEdit kv_edit = cue_layer ? read_memory : ModelWriter::RowEdit{};
    if (writes_kv) matrix("attn_k", o.n_embd, kv_width, in_std, kv_edit);
    if (writes_kv && !(gemma4 && global && o.global_v_equals_k)) matrix("attn_v", o.n_embd, kv_width, in_std, kv_edit);
    matrix("attn_output", q_width, o.n_embd, 1.0f / std::sqrt(static_cast<float>(q_width)),
           cue_layer ? write_answer : ModelWriter::RowEdit{});
    // Gemma 4 does not scale queries (attention scale 1.0), so its trained QK-norm weights keep
    // the scores moderate; weights of head_dim^-1/4 give scores of unit spread here, where 1.0
    // would give a softmax so sharp that f16 rounding of K decides between keys.
    const float qk_norm = gemma4 ? 1.0f / std::sqrt(std::sqrt(static_cast<float>(head_dim))) : 1.0f;
    model.norm(name("attn_q_norm"), head_dim, qk_norm);
    if (writes_kv) model.norm(name("attn_k_norm"), head_dim, qk_norm);
    const auto post_norm = [&](const std::string& tensor) {
      if (scripted) {
        model.f32(tensor, std::vector<float>(static_cast<size_t>(o.n_embd), 0.0f));
      } else {
        model.norm(tensor, o.n_embd);
      }
    };
    if (cue_layer) {
      std::vector<float> answer_only(static_cast<size_t>(o.n_embd), 0.0f);
      answer_only[static_cast<size_t>(cue->answer_axis)] = 1.0f;
      model.f32(name("post_attention_norm"), std::move(answer_only));
    } else {
      post_norm(name("post_attention_norm"));
    }
    model.norm(name("ffn_norm"), o.n_embd);
    matrix("ffn_gate", o.n_embd, n_ff, in_std);
    matrix("ffn_up", o.n_embd, n_ff, in_std);
    matrix("ffn_down", n_ff, o.n_embd, 1.0f / std::sqrt(static_cast<float>(n_ff)));
    post_norm(name("post_ffw_norm"));
    if (o.n_expert > 0) add_experts(model, o, il, in_std);
    if (o.n_embd_per_layer > 0) {
      matrix("inp_gate", o.n_embd, o.n_embd_per_layer, in_std);
      matrix("proj", o.n_embd_per_layer, o.n_embd, 1.0f / std::sqrt(static_cast<float>(o.n_embd_per_layer)));
      post_norm(name("post_norm"));
    }
    if (gemma4 && o.layer_output_scale) {
      model.f32(name("layer_output_scale"), model.values(name("layer_output_scale"), 1, [](SplitMix64& r) {
        return static_cast<float>(0.5 + r.uniform());
      }));
    }
  }
  w.write(out_path);
}

GgufWriter synth_metadata(const SynthOptions& o) {
  check_geometry(o);
  const GgufFile vocab = GgufFile::open(o.vocab_path);
  GgufWriter w;
  set_metadata(o, vocab, w);
  return w;
}

}  // namespace channel
