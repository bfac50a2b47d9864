#include "backend/cpu/geglu.h"

#include "core/half.h"
#include "model/gelu_table.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/geglu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace channel::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Targets whose f32 -> f16 conversion Highway emulates (x86 before AVX2's F16C, and the portable
// ones) do not round as vcvtps2ph does (the per-target test caught it): they take the reference.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128 || (HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2)
void Geglu(const float* gate, const float* up, float* y, int64_t n) { geglu_reference(gate, up, y, n); }
#else
void Geglu(const float* gate, const float* up, float* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> df16;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  const uint16_t* table = gelu_f16_table().data();
  HWY_ALIGN uint16_t halves[hn::MaxLanes(du16)];
  const auto low = hn::Set(df, -10.0f), high = hn::Set(df, 10.0f);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto g = hn::LoadU(df, gate + i);
    hn::Store(hn::BitCast(du16, hn::DemoteTo(df16, g)), du16, halves);
    for (int64_t k = 0; k < lanes; ++k) halves[k] = table[halves[k]];
    auto activated = hn::PromoteTo(df, hn::BitCast(df16, hn::Load(du16, halves)));
    activated = hn::IfThenElse(hn::Le(g, low), hn::Zero(df), activated);
    activated = hn::IfThenElse(hn::Ge(g, high), g, activated);
    hn::StoreU(hn::Mul(activated, hn::LoadU(df, up + i)), df, y + i);
  }
  geglu_reference(gate + i, up + i, y + i, n - i);
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace channel::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel::cpu {

HWY_EXPORT(Geglu);

void geglu(const float* gate, const float* up, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(Geglu)(gate, up, y, n); }

void geglu_reference(const float* gate, const float* up, float* y, int64_t n) {
  const auto& table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    float activated;
    if (g <= -10.0f) {
      activated = 0.0f;
    } else if (g >= 10.0f) {
      activated = g;
    } else {
      activated = f16_to_f32(table[f32_to_f16(g)]);
    }
    y[i] = activated * up[i];
  }
}

}  // namespace channel::cpu
#endif  // HWY_ONCE
