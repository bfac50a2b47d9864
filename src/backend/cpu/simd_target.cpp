#include "backend/cpu/simd_target.h"

#include <fmt/ranges.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace channel::cpu {
namespace {

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

}  // namespace

std::string simd_target_name() {
  // Highway orders targets so that better ones have lower bits; dynamic dispatch picks the
  // lowest bit among those compiled in (HWY_TARGETS) that the CPU supports.
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  return usable == 0 ? "scalar" : hwy::TargetName(usable & -usable);
}

void apply_simd_target_override() {
  const char* value = std::getenv("CHANNEL_SIMD_TARGET");
  if (!value || !*value) return;
  const std::string wanted = upper(value);
  std::vector<std::string> usable;
  for (int64_t targets = hwy::SupportedTargets() & HWY_TARGETS; targets != 0; targets &= targets - 1) {
    const int64_t target = targets & -targets;
    if (upper(hwy::TargetName(target)) == wanted) {
      // Without the better targets (the lower bits) this one is the best. Highway's test hook
      // is the way that reaches dispatch: with the Highway 1.0 here, DisableTargets changed
      // what SupportedTargets reports but not which kernels HWY_DYNAMIC_DISPATCH called.
      hwy::SetSupportedTargetsForTest((hwy::SupportedTargets() & HWY_TARGETS) & ~(target - 1));
      return;
    }
    usable.push_back(hwy::TargetName(target));
  }
  fail("CHANNEL_SIMD_TARGET={}: not a SIMD target of this build on this CPU (usable: {})", value,
       fmt::join(usable, ", "));
}

}  // namespace channel::cpu
