#include "core/checksum.h"

#include "core/error.h"

// The implementation compiled into this file (xxHash's header-only mode): no shared library to
// carry where the binary runs.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace channel {

struct Checksum::Xxh3State {
  XXH3_state_t state;
};

Checksum::Checksum(ChecksumKind kind) : kind_(kind) {
  if (kind_ == ChecksumKind::kXxh3) {
    xxh3_ = std::make_unique<Xxh3State>();
    XXH3_64bits_reset(&xxh3_->state);
  }
}

Checksum::~Checksum() = default;

Checksum& Checksum::update(std::span<const uint8_t> bytes) {
  if (kind_ == ChecksumKind::kXxh3) {
    XXH3_64bits_update(&xxh3_->state, bytes.data(), bytes.size());
  } else {
    fnv_.update(bytes);
  }
  return *this;
}

uint64_t Checksum::value() const {
  return kind_ == ChecksumKind::kXxh3 ? XXH3_64bits_digest(&xxh3_->state) : fnv_.value();
}

uint64_t checksum(ChecksumKind kind, std::span<const uint8_t> bytes) {
  return kind == ChecksumKind::kXxh3 ? XXH3_64bits(bytes.data(), bytes.size()) : fnv1a(bytes);
}

ChecksumKind file_checksum_kind(std::string_view format, uint32_t version, uint32_t newest) {
  if (version == 1) return ChecksumKind::kFnv1a;
  if (version >= 2 && version <= newest) return ChecksumKind::kXxh3;
  fail("{} format version {}; this build reads versions 1 to {}", format, version, newest);
}

}  // namespace channel
