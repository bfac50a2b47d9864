// A Hugging Face model directory (config.json, tokenizer files, model.safetensors or the shards of
// model.safetensors.index.json) as the GGUF file llama.cpp's converter would make of it, assembled
// in memory: the converter's metadata (hf_config, hf_vocabulary), its tensor names
// (hf_tensor_names) and its value transforms, with the weight matrices used in place from the
// safetensors mappings. Model::from_gguf then binds it as it binds a file, so `--model DIR` gives
// the model that `--model converted.gguf` gives.
//
// The converter's transforms, applied here: Gemma 3 norm weights + 1 (computed as the converter
// computes them: BF16 values widened to f32 first, F16 values rounded back to F16), the token
// embedding cut to the vocabulary's rows (Gemma 3's checkpoints carry image-token rows), Gemma 4's
// generated rope_freqs tensor, and F32 for what the converter always writes as F32 (norms and
// other 1-D tensors, the MoE router and its scales). Other matrices keep their stored type (BF16,
// F16 or F32), as a conversion with --outtype auto; safetensors' row-major [out, in] is GGUF's
// {in, out} (and a 3-D [experts, out, in] its {in, out, experts}), so no matrix is permuted.
#pragma once

#include <string>

#include "model/gguf.h"

namespace channel {

// Throws channel::Error naming the directory and the fault: a missing or malformed config.json
// or tokenizer file, an unsupported model, a tensor the converter would not map or one that two
// names map to, a vocabulary with more tokens than the embedding has rows.
GgufFile open_hf_directory(const std::string& directory);

// What `--model PATH` names: a GGUF file, or a Hugging Face directory as its conversion.
GgufFile open_model_path(const std::string& path);

}  // namespace channel
