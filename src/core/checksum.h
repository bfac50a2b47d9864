// Checksums of the files Channel writes (snapshots, episode stores). Which function a file uses
// is part of its format version: XXH3-64 (xxHash, from Debian's libxxhash-dev) from version 2
// on, 64-bit FNV-1a in version 1 files, which are still read (and, for an episode store begun by
// an older build, appended to). FNV-1a adds about one byte per cycle: a 175 MiB snapshot of a
// 12B model spent 200 ms in it when written and again when read; XXH3 reads tens of GB/s.
// Both detect corruption; neither authenticates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/fnv1a.h"

namespace channel {

enum class ChecksumKind { kFnv1a, kXxh3 };

// A checksum over bytes given in pieces (the same value as over their concatenation).
class Checksum {
 public:
  explicit Checksum(ChecksumKind kind);
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  Checksum& update(std::span<const uint8_t> bytes);
  uint64_t value() const;

 private:
  struct Xxh3State;
  ChecksumKind kind_;
  Fnv1a fnv_;
  std::unique_ptr<Xxh3State> xxh3_;
};

uint64_t checksum(ChecksumKind kind, std::span<const uint8_t> bytes);

// The checksum of a file of `format` (its name, for the message) in `version`: FNV-1a in version
// 1, XXH3 in versions 2 to `newest`. Throws channel::Error for any other version.
ChecksumKind file_checksum_kind(std::string_view format, uint32_t version, uint32_t newest);

}  // namespace channel
