// ||a - b|| / ||b|| in double: how the tests compare logits (b is the reference).
#pragma once

#include <cmath>
#include <span>

namespace channel::testing {

inline double relative_l2(std::span<const float> a, std::span<const float> b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace channel::testing
