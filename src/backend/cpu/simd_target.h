// The SIMD instruction set the CPU kernels dispatch to on this machine (Highway's run-time choice),
// and a way to force a lesser one, so that tests can run every kernel path this CPU has.
#pragma once

#include <string>

namespace channel::cpu {

// Highway's name of the best target compiled in and supported here, e.g. "AVX3" or "AVX2".
std::string simd_target_name();

// If CHANNEL_SIMD_TARGET names a target (Highway's name, e.g. AVX2, SSE4 or SCALAR, any case),
// dispatch uses that one from now on instead of the best; throws channel::Error for a name that
// is not compiled in or that this CPU lacks. Must run before the first kernel call.
void apply_simd_target_override();

}  // namespace channel::cpu
