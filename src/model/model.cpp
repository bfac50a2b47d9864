#include "model/model.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "model/hf_directory.h"
#include "model/quantize.h"

namespace channel {
namespace {

// Looks up tensors by name and checks their shapes, so every later access is in bounds.
class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& file) : file_(file) {}

  const GgufTensorInfo* find(const std::string& name) const { return file_.find_tensor(name); }
  std::string origin() const { return file_.origin(); }

  const GgufTensorInfo& require(const std::string& name, const std::vector<int64_t>& dims) const {
    const GgufTensorInfo* tensor = file_.find_tensor(name);
    if (!tensor) fail("{}: tensor {} is missing", file_.origin(), file_.tensor_label(name));
    check_dims(*tensor, dims);
    return *tensor;
  }

  void check_dims(const GgufTensorInfo& tensor, const std::vector<int64_t>& dims) const {
    if (tensor.dims != dims) {
      fail("{}: tensor {} has shape {} but the model configuration needs {}", file_.origin(), file_.tensor_label(tensor.name),
           fmt::join(tensor.dims, "x"), fmt::join(dims, "x"));
    }
  }

  // A 3-D tensor (stacked experts) is viewed as one matrix of all its rows.
  WeightMatrix matrix(const GgufTensorInfo& tensor) const {
    WeightMatrix w;
    w.type = tensor.type;
    w.data = file_.tensor_bytes(tensor).data();
    w.cols = tensor.dims[0];
    w.rows = tensor.n_elements() / w.cols;
    w.row_bytes = ggml_row_bytes(tensor.type, w.cols);
    return w;
  }

  WeightMatrix matrix(const std::string& name, const std::vector<int64_t>& dims) const {
    return matrix(require(name, dims));
  }

  std::vector<float> vector(const std::string& name, int64_t n) const {
    const GgufTensorInfo& tensor = require(name, {n});
    return decode(tensor);
  }

  std::vector<float> decode(const GgufTensorInfo& tensor) const {
    std::vector<float> out(static_cast<size_t>(tensor.n_elements()));
    dequantize(tensor.type, file_.tensor_bytes(tensor).data(), tensor.n_elements(), out.data());
    for (float v : out) {
      if (!std::isfinite(v)) fail("{}: tensor '{}' contains a non-finite value", file_.origin(), tensor.name);
    }
    return out;
  }

 private:
  const GgufFile& file_;
};

std::string blk(int il, const char* name) { return fmt::format("blk.{}.{}.weight", il, name); }
std::string blk_scale(int il, const char* name) { return fmt::format("blk.{}.{}.scale", il, name); }

using BindMatrix = std::function<void(WeightMatrix& view, const std::string& name, const std::vector<int64_t>& dims)>;

// The MoE tensors of one layer as llama.cpp's gemma4 loader creates them (load_arch_tensors, and
// the optional per-expert output scale ffn_down_exps.scale of llama_model_base).
void bind_experts(const TensorBinder& bind, const ModelConfig& config, int il, ExpertWeights& w,
                  const BindMatrix& bind_matrix) {
  const int64_t n_embd = config.n_embd;
  const int64_t n_expert = config.n_expert;
  const int64_t n_ff = config.n_ff_exp;
  w.pre_norm_2 = bind.vector(blk(il, "pre_ffw_norm_2"), n_embd);
  w.post_norm_1 = bind.vector(blk(il, "post_ffw_norm_1"), n_embd);
  w.post_norm_2 = bind.vector(blk(il, "post_ffw_norm_2"), n_embd);
  bind_matrix(w.router, blk(il, "ffn_gate_inp"), {n_embd, n_expert});
  w.router_scale = bind.vector(blk_scale(il, "ffn_gate_inp"), n_embd);
  if (bind.find(blk(il, "ffn_gate_up_exps"))) {
    bind_matrix(w.gate_up, blk(il, "ffn_gate_up_exps"), {n_embd, 2 * n_ff, n_expert});
  } else {
    bind_matrix(w.gate, blk(il, "ffn_gate_exps"), {n_embd, n_ff, n_expert});
    bind_matrix(w.up, blk(il, "ffn_up_exps"), {n_embd, n_ff, n_expert});
  }
  bind_matrix(w.down, blk(il, "ffn_down_exps"), {n_ff, n_embd, n_expert});
  if (bind.find(blk_scale(il, "ffn_down_exps"))) w.down_scale = bind.vector(blk_scale(il, "ffn_down_exps"), n_expert);
  // llama.cpp would scale the gate and up products by these too; no converter writes them.
  for (const char* tensor : {"ffn_gate_exps", "ffn_up_exps"}) {
    if (bind.find(blk_scale(il, tensor))) {
      fail("{}: tensor '{}' (a per-expert scale of the gate/up product) is not supported", bind.origin(),
           blk_scale(il, tensor));
    }
  }
}

}  // namespace

WeightMatrix expert_rows(const WeightMatrix& stacked, int n_expert, int e) {
  WeightMatrix w = stacked;
  w.rows = stacked.rows / n_expert;
  w.data = stacked.row(e * w.rows);
  return w;
}

// A bound weight matrix, for the conversion after binding: the view is rewritten in place.
struct Model::MatrixBinding {
  std::string tensor;
  WeightMatrix* matrix;
};

std::shared_ptr<const Model> Model::load(const std::string& path, const ModelLoadOptions& options) {
  return from_gguf(open_model_path(path), options);
}

std::shared_ptr<const Model> Model::from_gguf(GgufFile file, const ModelLoadOptions& options) {
  return std::shared_ptr<const Model>(new Model(std::move(file), options));
}

Model::Model(GgufFile file, const ModelLoadOptions& options) : file_(std::move(file)) {
  try {
    config_ = ModelConfig::from_gguf(file_);
  } catch (const Error& e) {
    fail("{}: {}", file_.origin(), e.what());
  }
  const TensorBinder bind(file_);
  const int64_t n_embd = config_.n_embd;
  const int64_t n_vocab = config_.n_vocab;
  // Every matrix is bound through here, so that the conversion below sees them all. The views
  // live in members that do not move before it runs (layers_ is reserved).
  std::vector<MatrixBinding> bindings;
  const BindMatrix bind_matrix = [&](WeightMatrix& view, const std::string& name, const std::vector<int64_t>& dims) {
    view = bind.matrix(name, dims);
    bindings.push_back({name, &view});
  };

  bind_matrix(token_embd_, "token_embd.weight", {n_embd, n_vocab});
  if (bind.find("output.weight")) {
    bind_matrix(output_, "output.weight", {n_embd, n_vocab});
    output_tied_ = false;
  }
  output_norm_ = bind.vector("output_norm.weight", n_embd);

  // Gemma 4 stores one `rope_freqs` tensor shared by all global layers.
  std::vector<float> rope_freqs;
  layers_.reserve(static_cast<size_t>(config_.n_layer));
  for (int il = 0; il < config_.n_layer; ++il) {
    const LayerConfig& lc = config_.layers[il];
    LayerWeights& w = layers_.emplace_back();
    const int64_t q_width = int64_t{lc.n_head} * lc.head_dim;
    const int64_t kv_width = int64_t{lc.n_head_kv} * lc.head_dim;
    w.attn_norm = bind.vector(blk(il, "attn_norm"), n_embd);
    bind_matrix(w.wq, blk(il, "attn_q"), {n_embd, q_width});
    // A KV-shared layer computes no K or V, so llama.cpp does not need its attn_k, attn_v or
    // attn_k_norm; nor does Channel read them when a file has them.
    if (config_.owns_kv(il)) {
      bind_matrix(w.wk, blk(il, "attn_k"), {n_embd, kv_width});
      if (bind.find(blk(il, "attn_v"))) {
        bind_matrix(w.wv.emplace(), blk(il, "attn_v"), {n_embd, kv_width});
      } else if (config_.arch == ModelArch::Gemma3) {
        fail("{}: tensor {} is missing", file_.origin(), file_.tensor_label(blk(il, "attn_v")));
      }
      w.k_norm = bind.vector(blk(il, "attn_k_norm"), lc.head_dim);
    }
    bind_matrix(w.wo, blk(il, "attn_output"), {q_width, n_embd});
    w.q_norm = bind.vector(blk(il, "attn_q_norm"), lc.head_dim);
    w.post_attn_norm = bind.vector(blk(il, "post_attention_norm"), n_embd);
    w.ffn_norm = bind.vector(blk(il, "ffn_norm"), n_embd);
    bind_matrix(w.ffn_gate, blk(il, "ffn_gate"), {n_embd, lc.n_ff});
    bind_matrix(w.ffn_up, blk(il, "ffn_up"), {n_embd, lc.n_ff});
    bind_matrix(w.ffn_down, blk(il, "ffn_down"), {lc.n_ff, n_embd});
    w.post_ffn_norm = bind.vector(blk(il, "post_ffw_norm"), n_embd);
    if (config_.layer_output_scale) {
      if (const GgufTensorInfo* scale = bind.find(blk(il, "layer_output_scale"))) {
        bind.check_dims(*scale, {1});
        w.output_scale = bind.decode(*scale)[0];
      }
    }
    if (lc.rope_freq_factors) {
      if (rope_freqs.empty()) {
        const GgufTensorInfo* tensor = bind.find("rope_freqs.weight");
        if (!tensor) fail("{}: tensor 'rope_freqs.weight' (Gemma 4 global-layer RoPE factors) is missing", file_.origin());
        bind.check_dims(*tensor, {lc.n_rot / 2});
        rope_freqs = bind.decode(*tensor);
      }
      if (static_cast<int>(rope_freqs.size()) != lc.n_rot / 2) {
        fail("{}: 'rope_freqs.weight' has {} entries, layer {} needs {}", file_.origin(), rope_freqs.size(), il, lc.n_rot / 2);
      }
      w.rope_freq_factors = rope_freqs;
    }
    if (config_.has_per_layer_embeddings()) {
      const int64_t width = config_.n_embd_per_layer;
      bind_matrix(w.per_layer_gate, blk(il, "inp_gate"), {n_embd, width});
      bind_matrix(w.per_layer_proj, blk(il, "proj"), {width, n_embd});
      w.per_layer_post_norm = bind.vector(blk(il, "post_norm"), n_embd);
    }
    if (lc.moe) bind_experts(bind, config_, il, w.experts.emplace(), bind_matrix);
  }
  if (config_.has_per_layer_embeddings()) {
    const int64_t all_layers = int64_t{config_.n_layer} * config_.n_embd_per_layer;
    bind_matrix(per_layer_inputs_.token_embd, "per_layer_token_embd.weight", {all_layers, n_vocab});
    bind_matrix(per_layer_inputs_.model_proj, "per_layer_model_proj.weight", {n_embd, all_layers});
    per_layer_inputs_.proj_norm = bind.vector("per_layer_proj_norm.weight", config_.n_embd_per_layer);
  }
  convert_matrices(bindings, options);
  // A tied output reads the embedding matrix in the type it was converted to, as in a file
  // that llama.cpp quantized (it has no output.weight to give the output type to).
  if (output_tied_) output_ = token_embd_;
}

void Model::convert_matrices(const std::vector<MatrixBinding>& bindings, const ModelLoadOptions& options) {
  if (!options.conversion.converts_anything()) return;
  std::vector<std::pair<WeightMatrix*, GgmlType>> pending;
  for (const MatrixBinding& binding : bindings) {
    const WeightMatrix& view = *binding.matrix;
    const GgmlType target =
        target_type_on_load(options.conversion, weight_role_of(binding.tensor), view.type, view.cols);
    if (target == view.type) continue;
    pending.emplace_back(binding.matrix, target);
    converted_weights_.push_back({binding.tensor, target});
  }
  if (pending.empty()) return;
  const auto report = [&](int done) {
    if (options.conversion_progress) options.conversion_progress(done, static_cast<int>(pending.size()));
  };
  report(0);
  ThreadPool pool(options.conversion_threads);
  converted_bytes_.reserve(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    auto [view, target] = pending[i];
    ConvertedMatrix converted = convert_matrix(*view, target, pool);
    *view = converted.view;
    converted_bytes_.push_back(std::move(converted.bytes));
    report(static_cast<int>(i + 1));
  }
}

bool Model::holds_converted_bytes(const WeightMatrix& w) const {
  return std::any_of(converted_bytes_.begin(), converted_bytes_.end(),
                     [&](const MatrixBytes& bytes) { return bytes.data() == w.data; });
}

}  // namespace channel
