// Synthesizer presets: the geometries of real Gemma 3 and dense Gemma 4 models with random
// weights, for speed benchmarks (`channel model synth --preset NAME`). A preset model moves the
// bytes per token of the real one: same shapes, Q4_0 attention and FFN matrices, a Q8_0
// embedding (tied output), with SynthOptions::share_layer_matrices so that it is quick to write.
#pragma once

#include <string_view>
#include <vector>

#include "model/synthesizer.h"

namespace channel {

// The preset names, in table order: gemma3-1b, gemma3-4b, gemma3-12b, gemma3-27b, gemma4-12b,
// gemma4-31b.
std::vector<std::string_view> synth_preset_names();

// The options of preset `name`, all but vocab_path (the caller names the vocabulary);
// throws channel::Error naming the presets for an unknown name.
SynthOptions synth_preset(std::string_view name);

}  // namespace channel
