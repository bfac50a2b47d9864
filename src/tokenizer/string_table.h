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

  // A slot keeps the string's hash with its id, so a probe reads strings_ only on a likely match.
  struct Slot {
    int32_t id = -1;  // -1: empty
    size_t hash = 0;
  };

  std::vector<std::string> strings_;
  std::vector<Slot> slots_;  // size is a power of two
};

}  // namespace channel
