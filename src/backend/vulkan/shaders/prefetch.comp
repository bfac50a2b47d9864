#version 460
// Reads byte ranges of device memory that a later kernel of the pass will read (the next
// matrix-vector product's weights), so that they are in the GPU's L2 cache when it runs.
// Recorded right after a stage that keeps few of the device's compute units busy (a
// single-workgroup norm, the decode attention), with no barrier between the two: that stage's
// workgroups are scheduled first and these take the idle units and memory bandwidth
// (weight_prefetch.h). Every 32-bit word read is XORed into the checksum, so the loads cannot be
// optimized away and a test can check that every word of every range was read.
#include "common.glsl"
#include "prefetch_layout.glsl"

layout(local_size_x = PREFETCH_WORKGROUP) in;
// Loads an invocation issues before it uses any: enough bytes in flight to stream at the
// memory's bandwidth from a few hundred workgroups.
const uint kLoadsInFlight = PREFETCH_LOADS_IN_FLIGHT;
const uint kMaxRanges = PREFETCH_RANGES;
const uint kChecksumWords = PREFETCH_CHECKSUM_WORDS;
const uint kMaxSubgroups = PREFETCH_WORKGROUP / 4u;  // the smallest subgroup Vulkan allows is 4 invocations

layout(push_constant, std430) uniform PrefetchParams {
  uint64_t checksum;              // kChecksumWords uints
  uint64_t address[kMaxRanges];   // 16-byte aligned
  uint words[kMaxRanges];         // 16-byte words at address[r]; 0 for an unused range
} p;

shared uint subgroup_xor[kMaxSubgroups];

uint fold(uvec4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * PREFETCH_WORKGROUP;
  const uint workgroup = flat_workgroup_index();
  const uint first = workgroup * PREFETCH_WORKGROUP + gl_LocalInvocationID.x;
  uint folded = 0u;
  for (uint r = 0u; r < kMaxRanges; ++r) {
    const uint n = p.words[r];
    for (uint i = first; i < n; i += kLoadsInFlight * stride) {
      uvec4 loaded[kLoadsInFlight];
      for (uint k = 0u; k < kLoadsInFlight; ++k) {
        const uint w = i + k * stride;
        loaded[k] = w < n ? U128Ptr(p.address[r] + uint64_t(w) * 16u).v[0] : uvec4(0u);
      }
      for (uint k = 0u; k < kLoadsInFlight; ++k) folded ^= fold(loaded[k]);
    }
  }
  // One atomic per workgroup: the subgroups' XORs through shared memory.
  folded = subgroupXor(folded);
  if (subgroupElect()) subgroup_xor[gl_SubgroupID] = folded;
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    uint total = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) total ^= subgroup_xor[s];
    atomicXor(U32Ptr(p.checksum).v[workgroup % kChecksumWords], total);
  }
}
