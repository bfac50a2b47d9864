#include "backend/cpu/amx_support.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace channel::cpu {
namespace {

#if defined(__x86_64__)
bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;  // CPUID.(7, 0):EDX
  return (edx & kAmxTile) && (edx & kAmxInt8);
}

bool linux_grants_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023;  // asm/prctl.h
  constexpr long kXfeatureXtileData = 18;     // the tile registers' state component
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
}
#endif

}  // namespace

bool amx_int8_ready() {
#if defined(__x86_64__)
  static const bool ready = cpu_has_amx_int8() && linux_grants_tile_data();
  return ready;
#else
  return false;
#endif
}

}  // namespace channel::cpu
