// The merge loop shared by the BPE and SentencePiece tokenizers, in llama.cpp's order: a text is
// cut into characters, then the best-priority pair of neighbouring pieces merges, ties going to
// the leftmost pair, until no pair qualifies. Candidates are queued with the combined length they
// had; one whose pieces changed since then is stale (its combined length differs) and skipped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

namespace channel {

// A piece of the text: a byte range, linked to its neighbours by index.
struct Piece {
  uint32_t begin;
  uint32_t length;  // 0 once merged into its left neighbour
  int32_t prev;     // -1 at the ends
  int32_t next;
};

// One piece per character, with llama.cpp's idea of a character (utf8::sequence_length, cut
// short at the end of the text). Texts are limited to 4 GiB.
inline std::vector<Piece> split_characters(std::string_view text) {
  std::vector<Piece> pieces;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = std::min(utf8::sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const auto index = static_cast<int32_t>(pieces.size());
    pieces.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(length), index - 1, index + 1});
    pos += length;
  }
  if (!pieces.empty()) {
    pieces.back().next = -1;
  }
  return pieces;
}

// `priority(left, right)` gives the priority (higher merges first) of merging two neighbouring
// pieces, or nullopt if they do not merge; `merged(left)` is called after piece `left` took in
// its right neighbour.
template <typename Priority, typename PriorityFn, typename MergedFn>
void merge_pieces(std::vector<Piece>& pieces, PriorityFn priority, MergedFn merged) {
  struct Candidate {
    Priority priority;
    int32_t left;
    int32_t right;
    uint32_t length;
  };
  struct Worse {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> queue;
  const auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) {
      return;
    }
    if (const std::optional<Priority> p = priority(left, right)) {
      queue.push({*p, left, right,
                  pieces[static_cast<size_t>(left)].length + pieces[static_cast<size_t>(right)].length});
    }
  };

  for (int32_t i = 1; i < static_cast<int32_t>(pieces.size()); ++i) {
    consider(i - 1, i);
  }
  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    Piece& left = pieces[static_cast<size_t>(candidate.left)];
    Piece& right = pieces[static_cast<size_t>(candidate.right)];
    if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) {
      pieces[static_cast<size_t>(right.next)].prev = candidate.left;
    }
    merged(candidate.left);
    consider(left.prev, candidate.left);
    consider(candidate.left, left.next);
  }
}

}  // namespace channel
