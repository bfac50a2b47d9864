#include "tokenizer/gemma4_bpe.h"

#include <bit>

#include "core/error.h"
#include "tokenizer/piece_merger.h"
#include "tokenizer/space_marker.h"
#include "tokenizer/utf8.h"

namespace channel {

namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};

uint64_t pair_key(int32_t left_id, int32_t right_id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left_id)) << 32) | static_cast<uint32_t>(right_id);
}

size_t slot_of(uint64_t key, size_t n_slots) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & (n_slots - 1);
}

}  // namespace

Gemma4Bpe::Gemma4Bpe(const GgufFile& file, const Vocab& vocab) {
  constexpr std::string_view kKey = "tokenizer.ggml.merges";
  const GgufArray& merges = file.require(kKey).as_array(kKey);
  if (merges.element_type != GgufValueType::STRING) {
    fail("metadata key '{}' is not an array of strings", kKey);
  }
  if (merges.elements.size() > static_cast<size_t>(INT32_MAX)) {
    fail("metadata key '{}' has {} merges", kKey, merges.elements.size());
  }
  pairs_.assign(std::bit_ceil(merges.elements.size() * 2 + 16), PairSlot{kEmptyKey, -1});

  const auto n_vocab = vocab.size();
  const auto intern = [&](std::string_view text) {
    const int32_t token = vocab.texts.find(text);
    return token >= 0 ? token : n_vocab + extra_.intern(text);
  };
  for (size_t rank = 0; rank < merges.elements.size(); ++rank) {
    const std::string_view merge = merges.elements[rank].as_string(kKey);
    // The separator is the first space after the first byte, so a left operand may be a space.
    const size_t separator = merge.find(' ', 1);
    if (separator == std::string_view::npos) {
      continue;  // llama.cpp files it under an empty pair, which no symbols ever form
    }
    add_rank(intern(merge.substr(0, separator)), intern(merge.substr(separator + 1)),
             static_cast<int32_t>(rank));
  }
}

void Gemma4Bpe::add_rank(int32_t left_id, int32_t right_id, int32_t rank) {
  const uint64_t key = pair_key(left_id, right_id);
  const size_t mask = pairs_.size() - 1;
  for (size_t index = slot_of(key, pairs_.size());; index = (index + 1) & mask) {
    PairSlot& slot = pairs_[index];
    if (slot.key == key) {
      return;  // a repeated merge keeps its first (lowest) rank
    }
    if (slot.key == kEmptyKey) {
      slot = {key, rank};
      return;
    }
  }
}

int32_t Gemma4Bpe::rank(int32_t left_id, int32_t right_id) const {
  if (left_id < 0 || right_id < 0) {
    return -1;
  }
  const uint64_t key = pair_key(left_id, right_id);
  const size_t mask = pairs_.size() - 1;
  for (size_t index = slot_of(key, pairs_.size());; index = (index + 1) & mask) {
    const PairSlot& slot = pairs_[index];
    if (slot.key == key || slot.key == kEmptyKey) {
      return slot.rank;  // -1 in an empty slot
    }
  }
}

int32_t Gemma4Bpe::symbol_id(const Vocab& vocab, std::string_view text) const {
  const int32_t token = vocab.texts.find(text);
  if (token >= 0) {
    return token;
  }
  const int32_t extra = extra_.find(text);
  return extra >= 0 ? vocab.size() + extra : -1;
}

void Gemma4Bpe::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
  const std::string escaped = escape_spaces(text);
  // llama.cpp decodes and re-encodes the text while cutting it into runs; invalid bytes become
  // U+FFFD there, and so here.
  std::string normalized;
  normalized.reserve(escaped.size());
  utf8::append_reencoded(escaped, normalized);

  const std::string_view all = normalized;
  for (size_t begin = 0; begin < all.size();) {
    const bool newlines = all[begin] == '\n';
    size_t end = begin;
    while (end < all.size() && (all[end] == '\n') == newlines) {
      ++end;
    }
    encode_run(vocab, all.substr(begin, end - begin), out);
    begin = end;
  }
}

void Gemma4Bpe::encode_run(const Vocab& vocab, std::string_view run, std::vector<int32_t>& out) const {
  // A run of newlines that is a token stays whole (llama.cpp's fix for Gemma 4, PR #21343).
  if (run.front() == '\n') {
    if (const int32_t token = vocab.texts.find(run); token >= 0) {
      out.push_back(token);
      return;
    }
  }

  std::vector<Piece> pieces = split_characters(run);
  const auto text_of = [&](int32_t index) {
    const Piece& piece = pieces[static_cast<size_t>(index)];
    return run.substr(piece.begin, piece.length);
  };
  std::vector<int32_t> ids(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    ids[i] = symbol_id(vocab, text_of(static_cast<int32_t>(i)));
  }
  merge_pieces<int32_t>(
      pieces,
      [&](int32_t left, int32_t right) -> std::optional<int32_t> {
        const int32_t merge_rank = rank(ids[static_cast<size_t>(left)], ids[static_cast<size_t>(right)]);
        return merge_rank >= 0 ? std::optional<int32_t>(-merge_rank) : std::nullopt;  // low rank first
      },
      [&](int32_t left) { ids[static_cast<size_t>(left)] = symbol_id(vocab, text_of(left)); });

  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].length == 0) {
      continue;
    }
    if (ids[i] >= 0 && ids[i] < vocab.size()) {
      out.push_back(ids[i]);
      continue;
    }
    // Not a token: one <0xXX> token per byte, skipping bytes the vocabulary has none for.
    for (char byte : text_of(static_cast<int32_t>(i))) {
      if (const int32_t token = vocab.byte_tokens[static_cast<uint8_t>(byte)]; token >= 0) {
        out.push_back(token);
      }
    }
  }
}

}  // namespace channel
