// Wall time since a point, in milliseconds with sub-millisecond resolution (what the protocol's
// timing fields report).
#pragma once

#include <chrono>

namespace channel {

using SteadyClock = std::chrono::steady_clock;

inline double milliseconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

}  // namespace channel
