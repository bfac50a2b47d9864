// Hugging Face Gemma tensor names -> the GGUF names the loader binds, as llama.cpp's converter
// names them (its filter_tensors, then gguf-py's tensor_mapping for gemma3 / gemma4).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace channel {

// The GGUF name of a text-model tensor; nullopt for a tensor the converter leaves out (vision
// and audio towers, the multimodal projector, RoPE caches). Throws channel::Error for any other
// name: a tensor the engine would not know what to do with.
std::optional<std::string> gguf_name_of_hf_tensor(std::string_view hf_name);

// The other way, for messages about a tensor a directory lacks: the Hugging Face name of a GGUF
// tensor in a checkpoint whose text model is under `text_prefix` ("model." or
// "model.language_model."); "" for a tensor the converter generates (rope_freqs) or one it has no
// name for.
std::string hf_name_of_gguf_tensor(std::string_view gguf_name, std::string_view text_prefix);

}  // namespace channel
