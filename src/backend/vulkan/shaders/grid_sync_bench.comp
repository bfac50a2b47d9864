#version 460
// For bench/vulkan_sync_bench.cpp only (not used by the backend): what it costs to wait for the
// whole grid, as a barrier between dependent dispatches (one dispatch a round) and as a barrier
// inside one dispatch of resident workgroups (an atomic arrival count and a generation word:
// the building block of a persistent decode kernel). Each round every invocation reads the
// value another workgroup wrote in the previous round, so a barrier that lets a round start
// before the last one's writes are visible gives wrong values, which the host checks:
//   round r reads half r % 2 and writes half (r + 1) % 2: out[i] = in[(i + WG) % n] + 1.
// Specialization constant 0: workgroup size.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform SyncParams {
  uint64_t sync;    // uint [3]: arrivals, generation, failures (zero before the first round)
  uint64_t data;    // float [2][n]: n = workgroups x workgroup size
  uint first_round;
  uint rounds;      // rounds in this dispatch (grid barriers between them)
  uint spin_limit;  // polls of the generation before a workgroup gives up (not all resident)
  uint pad;
} p;

// Every workgroup's stores before it are visible to every workgroup after it. `round` counts
// the barriers passed before this one: arrivals only grow, so none is ever reset.
void grid_barrier(uint round) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    CoherentU32 sync = CoherentU32(p.sync);
    const uint arrived = atomicAdd(sync.v[0], 1u) + 1u;
    if (arrived == gl_NumWorkGroups.x * (round + 1u)) {
      atomicMax(sync.v[1], round + 1u);
    } else {
      // Once one workgroup has given up, the others stop waiting too (the run is void anyway), so
      // that a grid too large to be resident ends after one wait instead of one a round.
      uint spins = 0u;
      while (atomicAdd(sync.v[1], 0u) < round + 1u && spins < p.spin_limit && atomicAdd(sync.v[2], 0u) == 0u) ++spins;
      if (spins == p.spin_limit) atomicAdd(sync.v[2], 1u);
    }
    memoryBarrierBuffer();
  }
  barrier();
}

void main() {
  const uint n = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint i = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
  CoherentF32 data = CoherentF32(p.data);
  for (uint r = p.first_round; r < p.first_round + p.rounds; ++r) {
    if (r != p.first_round) grid_barrier(r - 1u);
    const uint from = (r & 1u) * n, to = ((r + 1u) & 1u) * n;
    data.v[to + i] = data.v[from + (i + gl_WorkGroupSize.x) % n] + 1.0;
  }
}
