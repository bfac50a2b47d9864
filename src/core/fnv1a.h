// 64-bit FNV-1a: a fully specified hash that must come out the same on every build: model
// fingerprints, and the checksums of version 1 snapshot and episode store files (core/checksum.h;
// later versions use XXH3, far faster over megabytes). Not for adversaries: it detects
// corruption, it does not authenticate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace channel {

class Fnv1a {
 public:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  static constexpr uint64_t kPrime = 0x100000001b3ull;

  Fnv1a& update(std::span<const uint8_t> bytes) {
    uint64_t h = hash_;
    for (uint8_t b : bytes) h = (h ^ b) * kPrime;
    hash_ = h;
    return *this;
  }
  Fnv1a& update(std::string_view text) {
    return update(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  // The value's little-endian bytes, so the hash does not depend on the host's byte order.
  Fnv1a& update_u64(uint64_t value) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
    return update(bytes);
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = kOffsetBasis;
};

inline uint64_t fnv1a(std::span<const uint8_t> bytes) { return Fnv1a().update(bytes).value(); }

}  // namespace channel
