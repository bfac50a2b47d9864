#include "model/fingerprint.h"

#include <algorithm>
#include <bit>

#include "core/fnv1a.h"

namespace channel {
namespace {

// Leading bytes of each tensor's data that go into the fingerprint.
constexpr size_t kDataSampleBytes = 64;

void add_float(Fnv1a& hash, float value) { hash.update_u64(std::bit_cast<uint32_t>(value)); }

}  // namespace

uint64_t model_fingerprint(const Model& model) {
  Fnv1a hash;
  hash.update("channel model fingerprint v1");
  const ModelConfig& c = model.config();
  hash.update(c.arch_name).update_u64(c.arch_name.size());
  for (int64_t value : {int64_t{c.n_layer}, int64_t{c.n_embd}, int64_t{c.n_vocab}, int64_t{c.sliding_window},
                        int64_t{c.v_norm}, int64_t{c.layer_output_scale}}) {
    hash.update_u64(static_cast<uint64_t>(value));
  }
  for (float value : {c.norm_eps, c.query_scale, c.final_softcap}) add_float(hash, value);
  for (const LayerConfig& layer : c.layers) {
    for (int64_t value : {int64_t{layer.sliding}, int64_t{layer.n_head}, int64_t{layer.n_head_kv},
                          int64_t{layer.head_dim}, int64_t{layer.n_ff}, int64_t{layer.n_rot},
                          int64_t{layer.rope_freq_factors}}) {
      hash.update_u64(static_cast<uint64_t>(value));
    }
    add_float(hash, layer.rope_base);
    add_float(hash, layer.rope_freq_scale);
  }
  // The experts routed per token are metadata only, beside a tensor table that does not change
  // with them. Dense models hash nothing here, so their fingerprints are the ones they had.
  if (c.has_experts()) {
    for (int64_t value : {int64_t{c.n_expert}, int64_t{c.n_expert_used}, int64_t{c.n_ff_exp}}) {
      hash.update_u64(static_cast<uint64_t>(value));
    }
  }
  const GgufFile& file = model.gguf();
  hash.update_u64(file.tensors().size());
  for (const GgufTensorInfo& tensor : file.tensors()) {
    // Lengths go in too, so that no two different tables hash the same bytes.
    hash.update_u64(tensor.name.size()).update(tensor.name);
    hash.update_u64(static_cast<uint64_t>(tensor.type)).update_u64(tensor.dims.size());
    for (int64_t dim : tensor.dims) hash.update_u64(static_cast<uint64_t>(dim));
    const auto data = file.tensor_bytes(tensor);
    hash.update(data.first(std::min(data.size(), kDataSampleBytes)));
  }
  // State computed with converted weights is not valid for the stored ones. A model loaded
  // without conversion hashes nothing here, so its fingerprint is the one it always had.
  for (const ConvertedWeight& converted : model.converted_weights()) {
    hash.update_u64(converted.tensor.size()).update(converted.tensor);
    hash.update_u64(static_cast<uint64_t>(converted.type));
  }
  return hash.value();
}

}  // namespace channel
