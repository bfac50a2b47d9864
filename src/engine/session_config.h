// The session's settings: OP_SET_CONFIG's fields and the engine's defaults before any.
#pragma once

#include <cstdint>

#include "engine/sampler.h"

namespace channel {

struct SessionConfig {
  uint32_t thinking_budget = 512;
  uint32_t max_tokens = 128;  // response tokens per decode burst
  SamplerOptions sampler{.temperature = 0.7f, .top_k = 64, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.1f,
                         .repeat_last_n = 64, .frequency_penalty = 0.1f, .presence_penalty = 0.1f, .seed = 0};
  float quiescence_threshold = 0.0f;  // accepted and stored; this engine does not skip layers
  bool thinking_gate = false;         // accepted and stored; unused, as in the original
  bool operator==(const SessionConfig&) const = default;
};

}  // namespace channel
