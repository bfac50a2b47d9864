// Wall time since a point, in milliseconds with sub-millisecond resolution (what the protocol's
// timing fields report).
#pragma once

#include <chrono>
#include <cstdint>

namespace channel {

using SteadyClock = std::chrono::steady_clock;

inline double milliseconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

// Episodic memory's one clock, for its timestamps and recency alike: whole milliseconds of the
// steady clock (monotonic; the original mixed epoch milliseconds with its token clock).
inline int64_t monotonic_milliseconds() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now().time_since_epoch()).count();
}

// A monotonic_milliseconds() time as milliseconds since the Unix epoch, through the wall clock
// now (what OP_MEM_RESPONSE reports): off by as much as the wall clock was set since.
inline int64_t epoch_milliseconds_of(int64_t monotonic_ms) {
  const int64_t wall_now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return wall_now - (monotonic_milliseconds() - monotonic_ms);
}

}  // namespace channel
