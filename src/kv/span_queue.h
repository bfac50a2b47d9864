// The ring's live spans, oldest first, in storage reserved once. A span is marked in the decode
// loop (a sentence, a thought, a tool call), and std::deque allocated a block every few spans;
// the ring never holds more spans than live tokens plus the open one, so with that capacity
// reserved marking and evicting spans never allocate.
#pragma once

#include <cstddef>
#include <vector>

#include "kv/geometry.h"
#include "kv/span.h"

namespace channel::kv {

// The most spans the ring holds live: one per live token and the open one.
inline constexpr size_t kMaxLiveSpans = kPhysicalSlots + 1;

class SpanQueue {
 public:
  explicit SpanQueue(size_t capacity) { spans_.reserve(capacity); }
  // A copy holds the live spans in storage of the original's capacity (a plain vector copy would
  // reserve only their count, and the copy's next span would allocate).
  SpanQueue(const SpanQueue& other) : SpanQueue(other.spans_.capacity()) { spans_.assign(other.begin(), other.end()); }
  SpanQueue& operator=(const SpanQueue& other) {
    if (this != &other) {
      spans_.reserve(other.spans_.capacity());
      assign(other.begin(), other.end());
    }
    return *this;
  }
  SpanQueue(SpanQueue&&) noexcept = default;
  SpanQueue& operator=(SpanQueue&&) noexcept = default;

  bool empty() const { return head_ == spans_.size(); }
  size_t size() const { return spans_.size() - head_; }
  const Span& operator[](size_t i) const { return spans_[head_ + i]; }
  Span& front() { return spans_[head_]; }
  const Span& front() const { return spans_[head_]; }
  Span& back() { return spans_.back(); }
  const Span& back() const { return spans_.back(); }
  std::vector<Span>::const_iterator begin() const { return spans_.begin() + static_cast<std::ptrdiff_t>(head_); }
  std::vector<Span>::const_iterator end() const { return spans_.end(); }

  void push_back(const Span& span) {
    // The popped spans before head_ make room first; past the capacity only with more live spans.
    if (spans_.size() == spans_.capacity() && head_ > 0) {
      spans_.erase(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    spans_.push_back(span);
  }
  void pop_front() {
    if (++head_ == spans_.size()) {
      spans_.clear();
      head_ = 0;
    }
  }
  template <typename Iterator>
  void assign(Iterator first, Iterator last) {
    spans_.assign(first, last);
    head_ = 0;
  }

 private:
  std::vector<Span> spans_;
  size_t head_ = 0;  // spans_[0, head_) are popped
};

}  // namespace channel::kv
