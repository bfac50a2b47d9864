// Attention: the SIMD kernels against the scalar reference (bit for bit, on every Highway target
// this CPU runs), the reference against softmax attention in double precision (within what f16
// rounding allows), and edge cases.
#include "backend/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/attention_detail.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "hwy_targets.h"

namespace channel::cpu {
namespace {

struct Shape {
  int head_dim = 64;
  int n_head = 4;
  int n_head_kv = 2;
  int64_t n_tokens = 1;
  int64_t n_listed = 100;
  int64_t first_cell = 0;
  int window = 0;             // > 0: sliding window of this many positions
  float temperature = 3.0f;   // standard deviation of the scores
  int kv_split_threads = 2;
  AttentionScheme scheme = AttentionScheme::kAuto;
};

// Random inputs and the storage behind an AttentionProblem. Listed cell i holds the key of
// position first_cell + i, in a slot drawn at random from a larger cache; the queries are the
// last n_tokens positions (a batch attending to itself causally and to what came before).
struct Case {
  Shape shape;
  std::vector<float> q;
  std::vector<uint16_t> k, v;
  std::vector<uint32_t> slots;
  std::vector<int32_t> slot_positions, min_position, max_position;
  std::vector<float> out;

  Case(const Shape& s, uint32_t seed) : shape(s) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    const int64_t n_slots = s.n_listed + 19;
    const size_t stride = static_cast<size_t>(s.n_head_kv) * s.head_dim;
    k.resize(n_slots * stride);
    v.resize(n_slots * stride);
    for (auto& x : k) x = f32_to_f16(normal(rng));
    for (auto& x : v) x = f32_to_f16(normal(rng));
    std::vector<uint32_t> order(n_slots);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), rng);
    slots.assign(order.begin(), order.begin() + s.n_listed);
    slot_positions.assign(n_slots, -1);
    for (int64_t i = 0; i < s.n_listed; ++i) slot_positions[slots[i]] = static_cast<int32_t>(s.first_cell + i);
    const float q_scale = s.temperature / std::sqrt(static_cast<float>(s.head_dim));
    q.resize(s.n_tokens * s.n_head * s.head_dim);
    for (auto& x : q) x = normal(rng) * q_scale;
    for (int64_t t = 0; t < s.n_tokens; ++t) {
      const int32_t position = static_cast<int32_t>(s.first_cell + s.n_listed - s.n_tokens + t);
      max_position.push_back(position);
      min_position.push_back(s.window > 0 ? position - s.window + 1 : 0);
    }
    out.assign(q.size(), std::nanf(""));
  }

  AttentionProblem problem() {
    AttentionProblem p;
    p.head_dim = shape.head_dim;
    p.n_head = shape.n_head;
    p.n_head_kv = shape.n_head_kv;
    p.n_tokens = shape.n_tokens;
    p.q = q.data();
    p.out = out.data();
    p.min_position = min_position;
    p.max_position = max_position;
    p.k = k.data();
    p.v = v.data();
    p.kv_stride = static_cast<size_t>(shape.n_head_kv) * shape.head_dim;
    p.slots = slots;
    p.slot_positions = slot_positions;
    p.first_cell = shape.first_cell;
    p.kv_split_threads = shape.kv_split_threads;
    p.scheme = shape.scheme;
    return p;
  }
};

std::vector<float> run_reference(Case& c) {
  AttentionProblem p = c.problem();
  attend_reference(p);
  return c.out;
}

std::vector<float> run_simd(Case& c, int threads) {
  ThreadPool pool(threads);
  AttentionScratch scratch;
  std::fill(c.out.begin(), c.out.end(), std::nanf(""));
  attend(c.problem(), pool, scratch);
  return c.out;
}

// Same bits, NaNs excepted (there should be none).
void expect_identical(const std::vector<float>& simd, const std::vector<float>& reference, const std::string& what) {
  ASSERT_EQ(simd.size(), reference.size());
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < simd.size(); ++i) {
    ASSERT_FALSE(std::isnan(reference[i])) << what << " element " << i;
    uint32_t a, b;
    std::memcpy(&a, &simd[i], 4);
    std::memcpy(&b, &reference[i], 4);
    if (a != b && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << what << ": first at " << first << ": " << simd[first] << " vs " << reference[first];
}

// ------------------------------------------------------------------ SIMD against the reference

class AttentionSimd : public hwy_testing::PerHwyTarget {};

TEST_P(AttentionSimd, OneRowMatchesReference) {
  // Head sizes: whole 64-element steps only, steps plus leftovers, leftovers only, and a size
  // that is not a multiple of any vector; groups of 4 (several heads per key pass), 3 and 1.
  const Shape shapes[] = {
      {.head_dim = 256, .n_head = 8, .n_head_kv = 2, .n_tokens = 1, .n_listed = 200},
      {.head_dim = 512, .n_head = 4, .n_head_kv = 1, .n_tokens = 2, .n_listed = 90},
      {.head_dim = 32, .n_head = 6, .n_head_kv = 2, .n_tokens = 5, .n_listed = 70, .window = 33},
      {.head_dim = 64, .n_head = 2, .n_head_kv = 2, .n_tokens = 63, .n_listed = 150, .first_cell = 21},
      {.head_dim = 96, .n_head = 4, .n_head_kv = 2, .n_tokens = 3, .n_listed = 40},
      {.head_dim = 72, .n_head = 3, .n_head_kv = 1, .n_tokens = 2, .n_listed = 45},
      // One token, one KV head: its group of query heads is split between the two threads.
      {.head_dim = 256, .n_head = 4, .n_head_kv = 1, .n_tokens = 1, .n_listed = 200},
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    Case c(s, seed++);
    ASSERT_EQ(attention_scheme(c.problem()), AttentionScheme::kOneRow);
    const auto reference = run_reference(c);
    expect_identical(run_simd(c, 2), reference, "head size " + std::to_string(s.head_dim));
  }
}

TEST_P(AttentionSimd, SplitKvMatchesReference) {
  // Decode over more than 256 cells: llama.cpp's KV view is 512+ cells, split into one chunk per
  // thread; chunk boundaries fall inside the listed cells (first_cell 100) and a sliding window
  // leaves whole chunks empty.
  const Shape shapes[] = {
      {.head_dim = 256, .n_head = 8, .n_head_kv = 2, .n_listed = 600, .first_cell = 100, .kv_split_threads = 2},
      {.head_dim = 64, .n_head = 4, .n_head_kv = 1, .n_listed = 700, .kv_split_threads = 3},
      {.head_dim = 32, .n_head = 4, .n_head_kv = 2, .n_listed = 300, .window = 40, .kv_split_threads = 16},
      {.head_dim = 512, .n_head = 2, .n_head_kv = 1, .n_listed = 257, .kv_split_threads = 1},
      // A ring-full sliding layer of Gemma 3 1B: its window lies in the second of two chunks, the
      // one KV head's four query heads are split between the threads.
      {.head_dim = 256, .n_head = 4, .n_head_kv = 1, .n_listed = 512, .first_cell = 4032, .kv_split_threads = 2},
  };
  uint32_t seed = 11;
  for (const Shape& s : shapes) {
    Case c(s, seed++);
    ASSERT_EQ(attention_scheme(c.problem()), AttentionScheme::kSplitKv);
    const auto reference = run_reference(c);
    expect_identical(run_simd(c, 2), reference, "split head size " + std::to_string(s.head_dim));
  }
}

TEST_P(AttentionSimd, TiledMatchesReference) {
  // 64+ queries; tiles start mid-list (first_cell not a multiple of 64), a sliding window masks
  // keys inside tiles, partial row tiles, GQA groups of 1, 2 and 4.
  const Shape shapes[] = {
      {.head_dim = 64, .n_head = 4, .n_head_kv = 2, .n_tokens = 64, .n_listed = 64},
      {.head_dim = 256, .n_head = 8, .n_head_kv = 2, .n_tokens = 70, .n_listed = 150, .first_cell = 37},
      {.head_dim = 32, .n_head = 4, .n_head_kv = 2, .n_tokens = 100, .n_listed = 230, .first_cell = 5, .window = 32},
      {.head_dim = 512, .n_head = 2, .n_head_kv = 2, .n_tokens = 65, .n_listed = 129, .first_cell = 63},
      {.head_dim = 80, .n_head = 1, .n_head_kv = 1, .n_tokens = 64, .n_listed = 90},
  };
  uint32_t seed = 21;
  for (const Shape& s : shapes) {
    Case c(s, seed++);
    ASSERT_EQ(attention_scheme(c.problem()), AttentionScheme::kTiled);
    const auto reference = run_reference(c);
    expect_identical(run_simd(c, 2), reference, "tiled head size " + std::to_string(s.head_dim));
  }
}

TEST_P(AttentionSimd, ExtremeScoresMatchReference) {
  // Scores spread over thousands: the exponentials underflow to 0 (the polynomial's range limits,
  // subnormal results) and overflow nowhere; tiny scores: nearly uniform weights.
  for (float temperature : {2000.0f, 90.0f, 1e-6f}) {
    for (AttentionScheme scheme : {AttentionScheme::kOneRow, AttentionScheme::kTiled, AttentionScheme::kSplitKv}) {
      Shape s{.head_dim = 64, .n_head = 2, .n_head_kv = 1, .n_tokens = scheme == AttentionScheme::kTiled ? 64 : 1,
              .n_listed = 300, .temperature = temperature, .scheme = scheme};
      Case c(s, 31);
      const auto reference = run_reference(c);
      for (float x : reference) ASSERT_TRUE(std::isfinite(x));
      expect_identical(run_simd(c, 2), reference, "temperature " + std::to_string(temperature));
    }
  }
}

TEST_P(AttentionSimd, ThreadCountDoesNotChangeResults) {
  for (int64_t n_tokens : {1, 7, 64}) {
    Case c({.head_dim = 64, .n_head = 4, .n_head_kv = 2, .n_tokens = n_tokens, .n_listed = 600}, 41);
    const auto one = run_simd(c, 1);
    expect_identical(run_simd(c, 3), one, "3 threads, tokens " + std::to_string(n_tokens));
  }
  // Decode with one KV head: 2, 3 and 4 threads split its eight query heads in 2, 4 and 4 parts.
  Case c({.head_dim = 128, .n_head = 8, .n_head_kv = 1, .n_tokens = 1, .n_listed = 300, .first_cell = 700}, 43);
  const auto one = run_simd(c, 1);
  for (int threads : {2, 3, 4}) expect_identical(run_simd(c, threads), one, std::to_string(threads) + " threads, one KV head");
}

CHANNEL_INSTANTIATE_PER_HWY_TARGET(AttentionSimd);

// ------------------------------------------------------------------ the reference against double precision

// Softmax attention in double over the visible keys (f16 keys and values as stored, f32 queries).
std::vector<double> exact_attention(const Case& c) {
  const Shape& s = c.shape;
  const int group = s.n_head / s.n_head_kv;
  const size_t stride = static_cast<size_t>(s.n_head_kv) * s.head_dim;
  std::vector<double> out(c.q.size(), 0.0);
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    for (int h = 0; h < s.n_head; ++h) {
      const float* q = c.q.data() + (t * s.n_head + h) * s.head_dim;
      std::vector<double> scores;
      std::vector<const uint16_t*> values;
      for (uint32_t slot : c.slots) {
        const int32_t pos = c.slot_positions[slot];
        if (pos < c.min_position[t] || pos > c.max_position[t]) continue;
        const uint16_t* key = c.k.data() + slot * stride + (h / group) * s.head_dim;
        double dot = 0;
        for (int d = 0; d < s.head_dim; ++d) dot += double(q[d]) * f16_to_f32(key[d]);
        scores.push_back(dot);
        values.push_back(c.v.data() + slot * stride + (h / group) * s.head_dim);
      }
      if (scores.empty()) continue;
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& x : scores) sum += (x = std::exp(x - max));
      double* o = out.data() + (t * s.n_head + h) * s.head_dim;
      for (size_t j = 0; j < scores.size(); ++j) {
        for (int d = 0; d < s.head_dim; ++d) o[d] += scores[j] / sum * f16_to_f32(values[j][d]);
      }
    }
  }
  return out;
}

// Largest |result - exact| over the elements, in units of the largest |value|.
double max_error(const std::vector<float>& result, const std::vector<double>& exact) {
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, std::abs(result[i] - exact[i]));
  return worst;  // values are N(0, 1): max |v| is about 4
}

TEST(AttentionReference, CloseToDoublePrecisionSoftmax) {
  // One-row and split-KV: Q is rounded to f16 (relative 2^-11 per element, so a score moves by at
  // most 2^-11 times the sum of |q_d k_d|, about temperature * 2^-11 * 0.8 * head_dim^0.5), and
  // the accumulator is rounded to f16 after every key (half an f16 ulp, 2^-12 relative, each
  // time): over n keys the rounding errors add like a random walk, about sqrt(n) * 2^-12 * max|v|
  // for values of unit spread. The bound allows 4 max|v| (4 for N(0, 1)) times twice each term.
  // Tiled: everything in f32, bounded by 1e-5 here.
  struct Expectation {
    Shape shape;
    bool f16_accumulator;
  };
  const Expectation cases[] = {
      {{.head_dim = 256, .n_head = 4, .n_head_kv = 2, .n_tokens = 3, .n_listed = 60}, true},
      {{.head_dim = 32, .n_head = 2, .n_head_kv = 1, .n_tokens = 5, .n_listed = 50, .window = 20}, true},
      {{.head_dim = 512, .n_head = 2, .n_head_kv = 1, .n_tokens = 1, .n_listed = 400}, true},  // split
      {{.head_dim = 64, .n_head = 4, .n_head_kv = 4, .n_tokens = 64, .n_listed = 200, .first_cell = 3}, false},
      {{.head_dim = 256, .n_head = 2, .n_head_kv = 1, .n_tokens = 80, .n_listed = 150, .window = 50}, false},
  };
  uint32_t seed = 51;
  for (const Expectation& e : cases) {
    Case c(e.shape, seed++);
    const auto result = run_reference(c);
    const auto exact = exact_attention(c);
    const double keys = static_cast<double>(e.shape.n_listed);
    const double score_shift = e.shape.temperature * 0x1p-11 * 0.8 * std::sqrt(double(e.shape.head_dim));
    const double bound = e.f16_accumulator ? 4.0 * 2.0 * (2.0 * score_shift + std::sqrt(keys) * 0x1p-12) : 1e-5;
    EXPECT_LT(max_error(result, exact), bound) << "head size " << e.shape.head_dim << ", " << e.shape.n_tokens << " tokens";
  }
}

// ------------------------------------------------------------------ edge cases

TEST(AttentionEdges, OneVisibleKeyGivesItsValue) {
  for (AttentionScheme scheme : {AttentionScheme::kOneRow, AttentionScheme::kTiled, AttentionScheme::kSplitKv}) {
    for (int head_dim : {32, 64, 256, 512}) {
      // Each token sees exactly one key: a window of 1.
      Shape s{.head_dim = head_dim, .n_head = 4, .n_head_kv = 2, .n_tokens = scheme == AttentionScheme::kTiled ? 64 : 1,
              .n_listed = scheme == AttentionScheme::kSplitKv ? 300 : 64, .window = 1, .scheme = scheme};
      Case c(s, 61);
      ThreadPool pool(2);
      AttentionScratch scratch;
      for (bool simd : {false, true}) {
        if (simd) {
          attend(c.problem(), pool, scratch);
        } else {
          attend_reference(c.problem());
        }
        const size_t stride = static_cast<size_t>(s.n_head_kv) * head_dim;
        for (int64_t t = 0; t < s.n_tokens; ++t) {
          const int64_t listed = s.n_listed - s.n_tokens + t;  // the token's own key
          for (int h = 0; h < s.n_head; ++h) {
            const uint16_t* value = c.v.data() + c.slots[listed] * stride + (h / 2) * head_dim;
            const float* out = c.out.data() + (t * s.n_head + h) * head_dim;
            for (int d = 0; d < head_dim; ++d) ASSERT_EQ(out[d], f16_to_f32(value[d])) << t << " " << h << " " << d;
          }
        }
      }
    }
  }
}

TEST(AttentionEdges, NoVisibleKeysGiveZeros) {
  for (AttentionScheme scheme : {AttentionScheme::kOneRow, AttentionScheme::kTiled, AttentionScheme::kSplitKv}) {
    for (int64_t listed : {0, 80}) {
      Shape s{.head_dim = 64, .n_head = 2, .n_head_kv = 1, .n_tokens = scheme == AttentionScheme::kTiled ? 64 : 1,
              .n_listed = listed, .scheme = scheme};
      Case c(s, 71);
      // Queries before every key: nothing visible.
      for (auto& m : c.max_position) m = -1;
      ThreadPool pool(2);
      AttentionScratch scratch;
      attend(c.problem(), pool, scratch);
      for (float x : c.out) ASSERT_EQ(x, 0.0f);
      std::fill(c.out.begin(), c.out.end(), 1.0f);
      attend_reference(c.problem());
      for (float x : c.out) ASSERT_EQ(x, 0.0f);
    }
  }
}

TEST(AttentionEdges, DominantKeyTakesAllTheWeight) {
  // Very large scores: one key far above the others (exp underflows to exactly 0 for the rest).
  for (AttentionScheme scheme : {AttentionScheme::kOneRow, AttentionScheme::kTiled}) {
    Shape s{.head_dim = 64, .n_head = 1, .n_head_kv = 1, .n_tokens = scheme == AttentionScheme::kTiled ? 64 : 1,
            .n_listed = 100, .temperature = 1.0f, .scheme = scheme};
    Case c(s, 81);
    // Key 10 = 100 x the first query (rounded to f16): its score beats the others by far.
    const float* q = c.q.data();
    uint16_t* key = c.k.data() + c.slots[10] * 64;
    double score = 0;
    for (int d = 0; d < 64; ++d) {
      key[d] = f32_to_f16(200.0f * q[d]);
      score += double(q[d]) * f16_to_f32(key[d]);
    }
    ASSERT_GT(score, 150.0);
    ThreadPool pool(2);
    AttentionScratch scratch;
    attend(c.problem(), pool, scratch);
    const uint16_t* value = c.v.data() + c.slots[10] * 64;
    for (int d = 0; d < 64; ++d) EXPECT_EQ(c.out[d], f16_to_f32(value[d])) << d;
  }
}

TEST(AttentionEdges, SchemeFollowsLlamaCpp) {
  Case small({.head_dim = 64, .n_tokens = 63, .n_listed = 63}, 1);
  EXPECT_EQ(attention_scheme(small.problem()), AttentionScheme::kOneRow);
  Case batch({.head_dim = 64, .n_tokens = 64, .n_listed = 64}, 1);
  EXPECT_EQ(attention_scheme(batch.problem()), AttentionScheme::kTiled);
  Case odd_head({.head_dim = 72, .n_tokens = 64, .n_listed = 64}, 1);
  EXPECT_EQ(attention_scheme(odd_head.problem()), AttentionScheme::kOneRow);  // llama.cpp: DV % 16
  // Decode: llama.cpp's KV view is the used cells padded to 256; split from 512.
  Case decode({.head_dim = 64, .n_tokens = 1, .n_listed = 256}, 1);
  EXPECT_EQ(padded_kv_cells(decode.problem()), 256);
  EXPECT_EQ(attention_scheme(decode.problem()), AttentionScheme::kOneRow);
  Case long_decode({.head_dim = 64, .n_tokens = 1, .n_listed = 1, .first_cell = 256}, 1);
  EXPECT_EQ(padded_kv_cells(long_decode.problem()), 512);
  EXPECT_EQ(attention_scheme(long_decode.problem()), AttentionScheme::kSplitKv);
}

// ------------------------------------------------------------------ primitives

TEST(AttentionPrimitives, PolynomialExpIsAccurateAndSaturates) {
  using attention_detail::expf_ggml;
  // Within 2 ulp of expf where neither underflows (ggml: "maximum error 1.45358 plus 0.5 ulps").
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> range(-87.0f, 0.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = range(rng);
    const float a = expf_ggml(x), b = std::exp(x);
    EXPECT_LE(std::abs(a - b), 2.0f * (std::nextafter(b, 1e30f) - b)) << x;
  }
  EXPECT_EQ(expf_ggml(0.0f), 1.0f);
  EXPECT_EQ(expf_ggml(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(expf_ggml(-200.0f), 0.0f);                                      // |n| > 192
  EXPECT_GT(expf_ggml(-100.0f), 0.0f);                                      // subnormal, not flushed
  EXPECT_LT(expf_ggml(-100.0f), std::numeric_limits<float>::min());
  EXPECT_EQ(expf_ggml(200.0f), std::numeric_limits<float>::infinity());
}

TEST(AttentionPrimitives, ScaleByPowerOfTwoRoundsOnce) {
  using attention_detail::scale_by_pow2;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> mantissa(0.7f, 1.42f);
  for (int n = -192; n <= 192; ++n) {
    for (int i = 0; i < 50; ++i) {
      const float j = mantissa(rng);
      EXPECT_EQ(scale_by_pow2(j, n), std::ldexp(j, n)) << j << " * 2^" << n;
    }
  }
}

}  // namespace
}  // namespace channel::cpu
