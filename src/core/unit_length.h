// Scaling a vector to unit L2 length, as episodic memory's queries and centroids are: the sum of
// squares in double, then one f32 factor for every value.
#pragma once

#include <cmath>
#include <span>

namespace channel {

// Scales `v` to unit length; returns false, leaving `v` as it was, when it is all zeros.
inline bool scale_to_unit_length(std::span<float> v) {
  double squares = 0.0;
  for (float x : v) squares += double{x} * x;
  if (squares == 0.0) return false;
  const float inverse_norm = static_cast<float>(1.0 / std::sqrt(squares));
  for (float& x : v) x *= inverse_norm;
  return true;
}

}  // namespace channel
