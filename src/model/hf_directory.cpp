#include "model/hf_directory.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "core/error.h"
#include "core/half.h"
#include "model/hf_config.h"
#include "model/hf_tensor_names.h"
#include "model/hf_vocabulary.h"
#include "model/json_file.h"
#include "model/model_config.h"
#include "model/safetensors_directory.h"

namespace channel {
namespace {

namespace fs = std::filesystem;

// What the assembled file's tensors point into.
struct DirectoryWeights {
  SafetensorsDirectory weights;
  std::vector<std::vector<uint8_t>> computed;  // tensors the converter's transforms produced
};

std::span<const uint8_t> keep(DirectoryWeights& owner, const std::vector<float>& values) {
  std::vector<uint8_t>& bytes = owner.computed.emplace_back(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// A stored tensor's values in f32 (exact for every dtype read).
std::vector<float> widened(const SafetensorsTensor& tensor, std::span<const uint8_t> bytes) {
  std::vector<float> out(static_cast<size_t>(tensor.n_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (tensor.type == GgmlType::F32) {
      std::memcpy(&out[i], bytes.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = tensor.type == GgmlType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  return out;
}

// Gemma3Model.modify_tensors' `data_torch + 1`: prepare_tensors has widened BF16 to f32 by then,
// while F16 stays F16, so its sum is rounded to F16; the F32 result is what the GGUF holds.
std::vector<float> plus_one(const SafetensorsTensor& tensor, std::span<const uint8_t> bytes) {
  std::vector<float> out = widened(tensor, bytes);
  for (float& v : out) v = tensor.type == GgmlType::F16 ? f16_to_f32(f32_to_f16(v + 1.0f)) : v + 1.0f;
  return out;
}

// ModelBase.prepare_tensors writes these as F32 whatever the output type: 1-D tensors, norms,
// the MoE router (FFN_GATE_INP) and every tensor not named ".weight" (the router's and the
// experts' ".scale"). Widening is exact, but for the router it also decides how its product is
// computed: a checkpoint's BF16 router must be multiplied as the F32 matrix the GGUF holds.
bool converter_writes_f32(std::string_view name, const std::vector<int64_t>& dims) {
  return dims.size() <= 1 || name.ends_with("_norm.weight") || name.ends_with(".ffn_gate_inp.weight") ||
         !name.ends_with(".weight");
}

// The converter's tensors: every safetensors tensor under its GGUF name, transformed where the
// converter transforms it. `source_of` gets each GGUF name's HF name.
std::vector<GgufFile::PlacedTensor> place_tensors(DirectoryWeights& owner, const HfModelDescription& model,
                                                  int64_t n_vocab, const std::string& directory,
                                                  std::map<std::string, std::string, std::less<>>& source_of) {
  std::vector<GgufFile::PlacedTensor> placed;
  for (const SafetensorsFile& file : owner.weights.files()) {
    for (const SafetensorsTensor& tensor : file.tensors()) {
      std::optional<std::string> name;
      try {
        name = gguf_name_of_hf_tensor(tensor.name);
      } catch (const Error& e) {
        fail("{}: {}", file.origin(), e.what());
      }
      if (!name) continue;
      if (const auto [it, fresh] = source_of.emplace(*name, tensor.name); !fresh) {
        fail("{}: tensors '{}' and '{}' are both {}", directory, it->second, tensor.name, *name);
      }
      GgufTensorInfo info;
      info.name = *name;
      info.type = tensor.type;
      info.dims.assign(tensor.shape.rbegin(), tensor.shape.rend());  // GGUF lists the innermost dim first
      if (info.dims.empty()) info.dims = {1};  // a 0-dim scalar (a layer scalar saved so) is one value
      std::span<const uint8_t> bytes = file.tensor_bytes(tensor);
      if (model.norm_weights_plus_one && name->ends_with("norm.weight")) {
        info.type = GgmlType::F32;
        bytes = keep(owner, plus_one(tensor, bytes));
      } else if (tensor.type != GgmlType::F32 && converter_writes_f32(*name, tensor.shape)) {
        info.type = GgmlType::F32;
        bytes = keep(owner, widened(tensor, bytes));
      } else if (*name == "token_embd.weight" && info.dims.size() == 2) {
        // Gemma3Model.modify_tensors: rows past the vocabulary (image tokens) are dropped.
        if (info.dims[1] < n_vocab) {
          fail("{}: '{}' has {} rows but the vocabulary has {} tokens", directory, tensor.name, info.dims[1], n_vocab);
        }
        bytes = bytes.first(bytes.size() / static_cast<size_t>(info.dims[1]) * static_cast<size_t>(n_vocab));
        info.dims[1] = n_vocab;
      }
      placed.push_back({std::move(info), bytes});
    }
  }
  if (!model.rope_freqs.empty()) {
    GgufTensorInfo info;
    info.name = "rope_freqs.weight";
    info.type = GgmlType::F32;
    info.dims = {static_cast<int64_t>(model.rope_freqs.size())};
    placed.push_back({std::move(info), keep(owner, model.rope_freqs)});
  }
  return placed;
}

// Errors about a tensor name it as the directory does: the HF name it was read from, or for a
// missing one the name it would have beside the embedding's (e.g. under model.language_model.).
std::function<std::string(std::string_view)> source_namer(std::map<std::string, std::string, std::less<>> source_of) {
  std::string prefix = "model.";
  if (const auto embedding = source_of.find("token_embd.weight"); embedding != source_of.end()) {
    prefix = embedding->second.substr(0, embedding->second.size() - std::string_view("embed_tokens.weight").size());
  }
  return [source_of = std::move(source_of), prefix](std::string_view name) {
    const auto it = source_of.find(name);
    const std::string hf = it != source_of.end() ? it->second : hf_name_of_gguf_tensor(name, prefix);
    return hf.empty() ? hf : fmt::format("{} in the directory", hf);
  };
}

// llama.cpp does not store Gemma 3's query scale but derives it from the geometry; a checkpoint
// whose query_pre_attn_scalar says otherwise would be computed wrongly, so it is refused.
void check_query_scale(const GgufFile& file, const HfModelDescription& model) {
  if (!model.query_pre_attn_scalar) return;
  const ModelConfig config = ModelConfig::from_gguf(file);
  const float wanted = 1.0f / std::sqrt(static_cast<float>(*model.query_pre_attn_scalar));
  if (wanted != config.query_scale) {
    fail("{}: query_pre_attn_scalar = {} scales queries by {}, but llama.cpp's Gemma 3 (and Channel) scales this "
         "geometry's by {}",
         file.origin(), *model.query_pre_attn_scalar, wanted, config.query_scale);
  }
}

// The directory's own name ("gemma-4-31B-it"), as the converter names a model when nothing else does.
std::string directory_name(const fs::path& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "dir/" normalises to a trailing empty name
  return path.filename().string();
}

int64_t vocabulary_size(const std::vector<std::pair<std::string, GgufValue>>& vocabulary) {
  for (const auto& [key, value] : vocabulary) {
    if (key == "tokenizer.ggml.tokens") return static_cast<int64_t>(value.as_array(key).elements.size());
  }
  fail("no tokenizer.ggml.tokens");  // read_hf_vocabulary always writes them
}

}  // namespace

GgufFile open_hf_directory(const std::string& directory) {
  const fs::path dir(directory);
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) fail("{} has no config.json: not a Hugging Face model directory", directory);
  const nlohmann::json config = read_json_file(config_path);
  const HfModelDescription model = describe_hf_model(config, config_path.string());

  std::vector<std::pair<std::string, GgufValue>> metadata = model.metadata;
  metadata.emplace_back("general.name", GgufValue::string(directory_name(dir)));
  std::vector<std::pair<std::string, GgufValue>> vocabulary = read_hf_vocabulary(dir, model, config);
  const int64_t n_vocab = vocabulary_size(vocabulary);
  for (auto& entry : vocabulary) metadata.push_back(std::move(entry));

  auto owner = std::make_shared<DirectoryWeights>(DirectoryWeights{SafetensorsDirectory::open(directory), {}});
  std::map<std::string, std::string, std::less<>> source_of;
  std::vector<GgufFile::PlacedTensor> tensors = place_tensors(*owner, model, n_vocab, directory, source_of);
  GgufFile file = GgufFile::assemble(directory, std::move(metadata), std::move(tensors), owner,
                                     source_namer(std::move(source_of)));
  check_query_scale(file, model);
  return file;
}

GgufFile open_model_path(const std::string& path) {
  return fs::is_directory(path) ? open_hf_directory(path) : GgufFile::open(path);
}

}  // namespace channel
