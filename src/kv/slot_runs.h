// The slots a layer type reads, as up to five contiguous runs (anchors, recall, ring, and the
// transient tokens' scratch and ring slots), read in order. Runs are views into tables the ring
// keeps, so producing a view is O(1): sliding the window never copies slot lists.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace channel::kv {

struct SlotRuns {
  static constexpr size_t kMaxRuns = 5;
  std::array<std::span<const uint32_t>, kMaxRuns> runs{};

  size_t size() const {
    size_t n = 0;
    for (const auto& run : runs) n += run.size();
    return n;
  }
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& run : runs) {
      for (uint32_t slot : run) visit(slot);
    }
  }
  std::vector<uint32_t> to_vector() const {
    std::vector<uint32_t> slots;
    for_each([&](uint32_t slot) { slots.push_back(slot); });
    return slots;
  }
};

}  // namespace channel::kv
