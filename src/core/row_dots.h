// Dot products of every row of a float matrix with one vector: episodic memory's scan (centroids
// times the query). SIMD through Highway, dispatched at run time to the best target the CPU has,
// as the CPU backend's kernels are; it lives in core so that the engine uses it without a backend.
#pragma once

#include <cstddef>
#include <span>

namespace channel {

// out[r] = Σ_i matrix[r·cols + i] · vector[i] for every row r of the row-major `matrix`
// (out.size() rows of vector.size() columns), summed in float: each row's sum runs in several
// SIMD lanes and accumulators that are added at the end, so its rounding error stays within
// the classical bound cols · FLT_EPSILON · Σ_i |matrix[r·cols + i] · vector[i]| (of any order),
// and in practice far below it. Throws channel::Error when the sizes do not match.
void dot_rows_f32(std::span<const float> matrix, std::span<const float> vector, std::span<float> out);

}  // namespace channel
