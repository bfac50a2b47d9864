#include "backend/cpu/activation_quant.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/activation_quant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace channel::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void QuantizeRowQ8_0(const float* x, int64_t n, BlockQ8_0* out) {
  // Every step is either exact (abs, max) or per element (multiply, round), so the vector width
  // does not change the result; capping at one block keeps the loops simple.
  const hn::CappedTag<float, kQuantBlock> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t lanes = hn::Lanes(df);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    auto abs_max = hn::Zero(df);
    for (size_t i = 0; i < kQuantBlock; i += lanes) abs_max = hn::Max(abs_max, hn::Abs(hn::LoadU(df, xb + i)));
    const float amax = hn::GetLane(hn::MaxOfLanes(df, abs_max));
    out[b].d = f32_to_f16(amax / 127.f);
    const auto inverse_scale = hn::Set(df, amax != 0.0f ? 127.f / amax : 0.0f);
    for (size_t i = 0; i < kQuantBlock; i += lanes) {
      // Round() is round-to-nearest-even like _mm256_round_ps(_MM_ROUND_NEAREST); the
      // conversion of the already integral value is exact, and |q| <= 127 fits int8.
      const auto q = hn::ConvertTo(di32, hn::Round(hn::Mul(hn::LoadU(df, xb + i), inverse_scale)));
      hn::StoreU(hn::DemoteTo(di8, q), di8, out[b].qs + i);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace channel::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel::cpu {

HWY_EXPORT(QuantizeRowQ8_0);

void quantize_row_q8_0(const float* x, int64_t n, BlockQ8_0* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowQ8_0)(x, n, out);
}

void quantize_row_q8_0_reference(const float* x, int64_t n, BlockQ8_0* out) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0.0f;
    for (int64_t i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
    out[b].d = f32_to_f16(amax / 127.f);
    const float inverse_scale = amax != 0.0f ? 127.f / amax : 0.0f;
    for (int64_t i = 0; i < kQuantBlock; ++i) {
      out[b].qs[i] = static_cast<int8_t>(std::nearbyint(xb[i] * inverse_scale));  // ties to even
    }
  }
}

}  // namespace channel::cpu
#endif  // HWY_ONCE
