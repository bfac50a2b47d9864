#include "backend/cpu/simd_target.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

namespace channel::cpu {

std::string simd_target_name() {
  // Highway orders targets so that better ones have lower bits; dynamic dispatch picks the
  // lowest bit among those compiled in (HWY_TARGETS) that the CPU supports.
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  return usable == 0 ? "scalar" : hwy::TargetName(usable & -usable);
}

}  // namespace channel::cpu
