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

}  // namespace channel
