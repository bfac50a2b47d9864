#include "tokenizer/string_table.h"

#include <bit>
#include <functional>

namespace channel {

namespace {

size_t hash_of(std::string_view text) { return std::hash<std::string_view>{}(text); }

}  // namespace

void StringTable::reserve(size_t n_strings) {
  strings_.reserve(n_strings);
  hashes_.reserve(n_strings);
  // Keep the load factor at or below one half.
  const size_t wanted = std::bit_ceil(n_strings * 2 + 16);
  if (wanted > slots_.size()) {
    slots_.assign(wanted, -1);
    for (size_t id = 0; id < strings_.size(); ++id) {
      slots_[probe(strings_[id], hashes_[id])] = static_cast<int32_t>(id);
    }
  }
}

size_t StringTable::probe(std::string_view text, size_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const int32_t id = slots_[slot];
    if (id < 0 || (hashes_[static_cast<size_t>(id)] == hash && strings_[static_cast<size_t>(id)] == text)) {
      return slot;
    }
  }
}

void StringTable::grow() { reserve(strings_.size() * 2); }

int32_t StringTable::intern(std::string_view text) {
  if ((strings_.size() + 1) * 2 > slots_.size()) {
    grow();
  }
  const size_t hash = hash_of(text);
  const size_t slot = probe(text, hash);
  if (slots_[slot] >= 0) {
    return slots_[slot];
  }
  const auto id = static_cast<int32_t>(strings_.size());
  strings_.emplace_back(text);
  hashes_.push_back(hash);
  slots_[slot] = id;
  return id;
}

int32_t StringTable::find(std::string_view text) const {
  if (slots_.empty()) {
    return -1;
  }
  return slots_[probe(text, hash_of(text))];
}

}  // namespace channel
