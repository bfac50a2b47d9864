#include "tokenizer/special_splitter.h"

#include <algorithm>

namespace channel {

namespace {

int32_t child(const std::vector<std::pair<uint8_t, int32_t>>& children, uint8_t byte) {
  for (const auto& [b, node] : children) {
    if (b == byte) {
      return node;
    }
  }
  return -1;
}

}  // namespace

SpecialSplitter::SpecialSplitter(const Vocab& vocab) {
  using namespace token_attr;
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.attrs[static_cast<size_t>(id)] & (kControl | kUserDefined | kUnknown)) {
      ids.push_back(id);
    }
  }
  // std::sort, not stable_sort: llama.cpp orders texts of equal length by what std::sort leaves,
  // and the same algorithm on the same input reproduces that order.
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return vocab.texts.text(a).size() > vocab.texts.text(b).size();
  });

  trie_.emplace_back();
  for (int32_t id : ids) {
    const auto index = static_cast<int32_t>(specials_.size());
    const bool needs_parse_special = (vocab.attrs[static_cast<size_t>(id)] & (kControl | kUnknown)) != 0;
    specials_.push_back({id, vocab.texts.text(id), needs_parse_special});

    int32_t node = 0;
    for (char c : specials_.back().text) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t next = child(trie_[static_cast<size_t>(node)].children, byte);
      if (next < 0) {
        next = static_cast<int32_t>(trie_.size());
        trie_[static_cast<size_t>(node)].children.emplace_back(byte, next);
        trie_.emplace_back();
      }
      node = next;
    }
    trie_[static_cast<size_t>(node)].special = index;
  }
}

std::vector<bool> SpecialSplitter::occurring(std::string_view text) const {
  std::vector<bool> found(specials_.size(), false);
  for (size_t start = 0; start < text.size(); ++start) {
    int32_t node = 0;
    for (size_t pos = start; pos < text.size(); ++pos) {
      node = child(trie_[static_cast<size_t>(node)].children, static_cast<uint8_t>(text[pos]));
      if (node < 0) {
        break;
      }
      if (const int32_t special = trie_[static_cast<size_t>(node)].special; special >= 0) {
        found[static_cast<size_t>(special)] = true;
      }
    }
  }
  return found;
}

std::vector<TextFragment> SpecialSplitter::split(std::string_view text, bool parse_special) const {
  std::vector<TextFragment> fragments;
  if (text.empty()) {
    return fragments;
  }
  fragments.push_back({-1, 0, text.size()});

  const std::vector<bool> found = occurring(text);
  std::vector<TextFragment> next;
  for (size_t index = 0; index < specials_.size(); ++index) {
    const Special& special = specials_[index];
    if (!found[index] || (special.needs_parse_special && !parse_special)) {
      continue;
    }
    next.clear();
    for (const TextFragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
        continue;
      }
      const std::string_view plain = text.substr(0, fragment.end);
      size_t begin = fragment.begin;
      for (size_t match = plain.find(special.text, begin); match != std::string_view::npos;
           match = plain.find(special.text, begin)) {
        if (match > begin) {
          next.push_back({-1, begin, match});
        }
        next.push_back({special.token, 0, 0});
        begin = match + special.text.size();
      }
      if (begin < fragment.end) {
        next.push_back({-1, begin, fragment.end});
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace channel
