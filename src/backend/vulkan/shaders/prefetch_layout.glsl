// The shape of prefetch.comp, read by the shader and by the host (weight_prefetch.cpp,
// shader_push.h) alike, so that the two cannot disagree. Plain preprocessor constants on unsigned
// values, which GLSL and C++ read alike.
#ifndef CHANNEL_PREFETCH_LAYOUT_GLSL
#define CHANNEL_PREFETCH_LAYOUT_GLSL

#define PREFETCH_WORKGROUP 256u       // invocations per workgroup
#define PREFETCH_LOADS_IN_FLIGHT 4u   // 16-byte loads an invocation issues before it uses any
#define PREFETCH_RANGES 6u            // byte ranges one dispatch reads
#define PREFETCH_CHECKSUM_WORDS 64u   // uints the workgroups' XORs go to (workgroup w: w % this)

#endif
