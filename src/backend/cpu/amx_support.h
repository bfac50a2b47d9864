// Intel AMX (Advanced Matrix Extensions, Sapphire Rapids and later) for the CPU kernels: tile
// registers that multiply 16 x 64 bytes by 64 x 16 bytes into 16 x 16 int32 sums at once.
#pragma once

namespace channel::cpu {

// The CPU has AMX-TILE and AMX-INT8, and Linux lets this process use the tile registers (asked
// once, with arch_prctl(ARCH_REQ_XCOMP_PERM); kernels before 5.16 and CPUs without AMX say no,
// and the kernels then use VNNI).
bool amx_int8_ready();

}  // namespace channel::cpu
