// matmul on a pool of its own, into outputs that start as NaN so that an output a kernel skips
// shows; for the CPU matrix-kernel tests.
#pragma once

#include <cmath>
#include <vector>

#include "backend/cpu/matmul.h"

namespace channel::testing {

inline std::vector<float> run_matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tokens,
                                     int threads = 2) {
  ThreadPool pool(threads);
  std::vector<float> out(n_tokens * w.rows, std::nanf(""));
  cpu::matmul(w, x.data(), n_tokens, out.data(), pool);
  return out;
}

}  // namespace channel::testing
