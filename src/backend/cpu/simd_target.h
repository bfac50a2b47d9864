// The SIMD instruction set the CPU kernels dispatch to on this machine (Highway's run-time choice).
#pragma once

#include <string>

namespace channel::cpu {

// Highway's name of the best target compiled in and supported here, e.g. "AVX3" or "AVX2".
std::string simd_target_name();

}  // namespace channel::cpu
