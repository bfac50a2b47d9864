// Elastic yields (original-channel.md §2.6): a decode burst pauses at a sentence or paragraph
// end, once enough tokens have been written and no quote, code span or bracket is open, so the
// host can interject; OP_RESUME continues.
#pragma once

#include <cstdint>
#include <string_view>

namespace channel {

// Tracks whether the text written so far in a burst is "at rest": outside code fences, inline
// code and double quotes, with all brackets closed. Single quotes are not tracked (apostrophes).
class SyntaxTracker {
 public:
  void feed(std::string_view text);
  bool at_rest() const;
  void reset() { *this = SyntaxTracker(); }

 private:
  bool in_fence_ = false;
  bool in_inline_code_ = false;
  bool in_quote_ = false;
  int backticks_ = 0;  // consecutive backticks seen so far (a fence is three)
  int parens_ = 0, braces_ = 0, brackets_ = 0;
};

// Where a token ends the text: a paragraph ("\n\n") or a line after a sentence.
struct Boundary {
  bool paragraph = false;
  bool sentence_newline = false;
};

// The original's thresholds. `count` is the thinking or response tokens of this burst;
// `margin` is the top-1 minus top-2 logit of the distribution the token came from.
bool should_yield(bool in_thought, uint32_t count, const Boundary& boundary, float margin);

}  // namespace channel
