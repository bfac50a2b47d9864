// Interned strings with dense ids 0, 1, 2, ... in insertion order. The tokenizer looks up every
// candidate merge by the bytes it spans, so lookups take a string_view and allocate nothing; an
// open-addressing table keeps building the 262144-token vocabulary to a few milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace channel {

class StringTable {
 public:
  void reserve(size_t n_strings);

  // Id of `text`, adding it with the next id if it is new.
  int32_t intern(std::string_view text);
  // Id of `text`, or -1 if it was never interned.
  int32_t find(std::string_view text) const;

  const std::string& text(int32_t id) const { return strings_[static_cast<size_t>(id)]; }
  size_t size() const { return strings_.size(); }

 private:
  // Slot of `text` in slots_: the one holding it, or the empty one where it would go.
  size_t probe(std::string_view text, size_t hash) const;
  void grow();

  std::vector<std::string> strings_;
  std::vector<size_t> hashes_;   // hash of strings_[id], kept so growing needs no rehash
  std::vector<int32_t> slots_;   // id, or -1 for an empty slot; size is a power of two
};

}  // namespace channel
