#include "engine/elastic_yield.h"

namespace channel {

void SyntaxTracker::feed(std::string_view text) {
  for (char c : text) {
    if (c == '`') {
      if (++backticks_ == 3) {
        in_fence_ = !in_fence_;
        in_inline_code_ = false;
        backticks_ = 0;
      }
      continue;
    }
    if (backticks_ > 0 && !in_fence_) in_inline_code_ = backticks_ % 2 == 1 ? !in_inline_code_ : in_inline_code_;
    backticks_ = 0;
    if (in_fence_ || in_inline_code_) continue;
    switch (c) {
      case '"': in_quote_ = !in_quote_; break;
      case '(': ++parens_; break;
      case ')': parens_ = parens_ > 0 ? parens_ - 1 : 0; break;
      case '{': ++braces_; break;
      case '}': braces_ = braces_ > 0 ? braces_ - 1 : 0; break;
      case '[': ++brackets_; break;
      case ']': brackets_ = brackets_ > 0 ? brackets_ - 1 : 0; break;
      default: break;
    }
  }
}

bool SyntaxTracker::at_rest() const {
  // A run of backticks not yet followed by anything counts as inline code opening.
  const bool pending_inline = backticks_ % 2 == 1 && !in_fence_;
  return !in_fence_ && !in_inline_code_ && !pending_inline && !in_quote_ && parens_ == 0 && braces_ == 0 &&
         brackets_ == 0;
}

bool should_yield(bool in_thought, uint32_t count, const Boundary& b, float margin) {
  const bool either = b.paragraph || b.sentence_newline;
  if (in_thought) {
    return (count >= 24 && b.paragraph) || (count >= 36 && b.sentence_newline) || (count >= 64 && either);
  }
  if (count < 10) return false;
  return (count >= 16 && b.paragraph) || (count >= 12 && b.sentence_newline && margin >= 1.5f) ||
         (count >= 32 && b.sentence_newline) || (count >= 48 && either);
}

}  // namespace channel
