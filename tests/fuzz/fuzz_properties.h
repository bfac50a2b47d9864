// Shared by the fuzz targets: how a broken property ends the run, and the little-endian field
// access the checksum-fixing targets use to reach past the readers' integrity checks.
#pragma once

#include <cerrno>  // program_invocation_short_name (GNU)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace channel::fuzz {

// A property the target checks does not hold: a finding, reported as libFuzzer reports a crash.
[[noreturn]] inline void violated(const char* property) {
  std::fprintf(stderr, "%s: property violated: %s\n", program_invocation_short_name, property);
  std::abort();
}

inline uint64_t read_le(const std::vector<uint8_t>& bytes, size_t at, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i) value |= uint64_t{bytes[at + i]} << (8 * i);
  return value;
}

inline void write_u64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) {
  for (size_t i = 0; i < 8; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace channel::fuzz
