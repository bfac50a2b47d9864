#include "tokenizer/string_table.h"

#include <bit>
#include <functional>

namespace channel {

namespace {

size_t hash_of(std::string_view text) { return std::hash<std::string_view>{}(text); }

}  // namespace

void StringTable::reserve(size_t n_strings) {
  strings_.reserve(n_strings);
  // Keep the load factor at or below one half.
  const size_t wanted = std::bit_ceil(n_strings * 2 + 16);
  if (wanted > slots_.size()) {
    std::vector<Slot> old(wanted);
    old.swap(slots_);
    for (const Slot& slot : old) {
      if (slot.id >= 0) {
        slots_[probe(strings_[static_cast<size_t>(slot.id)], slot.hash)] = slot;
      }
    }
  }
}

size_t StringTable::probe(std::string_view text, size_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t index = hash & mask;; index = (index + 1) & mask) {
    const Slot& slot = slots_[index];
    if (slot.id < 0 || (slot.hash == hash && strings_[static_cast<size_t>(slot.id)] == text)) {
      return index;
    }
  }
}

int32_t StringTable::intern(std::string_view text) {
  if ((strings_.size() + 1) * 2 > slots_.size()) {
    reserve(strings_.size() * 2);
  }
  const size_t hash = hash_of(text);
  Slot& slot = slots_[probe(text, hash)];
  if (slot.id >= 0) {
    return slot.id;
  }
  slot = {static_cast<int32_t>(strings_.size()), hash};
  strings_.emplace_back(text);
  return slot.id;
}

int32_t StringTable::find(std::string_view text) const {
  if (slots_.empty()) {
    return -1;
  }
  return slots_[probe(text, hash_of(text))].id;
}

}  // namespace channel
