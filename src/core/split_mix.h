// SplitMix64: a small, fully specified random generator. The std:: distributions are
// implementation-defined, so anything that must come out the same with every standard library
// (synthesized models, generated test inputs) draws from this.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>

namespace channel {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += kIncrement);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }  // [0, 1)
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  // Standard normal by Box-Muller; u1 is kept away from 0 so the log is finite.
  float normal() {
    const double u1 = uniform() + 0x1p-54;
    const double u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
  // Moves the stream past `n` normal() draws (two next() each) in constant time: the state is a
  // counter, so threads can each draw their own part of one stream and get the same values.
  void skip_normals(uint64_t n) { state_ += 2 * n * kIncrement; }

 private:
  static constexpr uint64_t kIncrement = 0x9e3779b97f4a7c15ull;
  uint64_t state_;
};

}  // namespace channel
