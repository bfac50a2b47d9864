// llama.cpp's prebuilt CPU backend comes as one library per instruction-set variant
// (libggml-cpu-haswell.so, -zen4.so, -sapphirerapids.so, ...); ggml_backend_load_all picks the one
// with the highest score for this CPU. Variants round differently (the AMX one's Q8_0 product is
// even wrong for one-block rows), so the parity tests load a chosen variant explicitly instead.
#pragma once

#include <string>
#include <vector>

namespace oracle {

struct CpuVariant {
  std::string name;                   // "zen4" for libggml-cpu-zen4.so
  std::string path;
  int score = 0;                      // ggml_backend_score: 0 = not supported here, higher = more features
  std::vector<std::string> features;  // what the variant was built with, e.g. "AVX512_BF16", "AMX_INT8"
};

// The variants in `libdir` that this CPU can run, by descending score.
std::vector<CpuVariant> supported_cpu_variants(const std::string& libdir);

// What ggml_backend_load_all would load: the highest score.
const CpuVariant& default_cpu_variant(const std::vector<CpuVariant>& variants);

// The reference the parity tests compare against: the highest-scoring variant built without
// AMX or FP16 vector arithmetic, whose results do not depend on which CPU generation runs them
// (zen4 on any AVX-512 machine, Sapphire Rapids included).
const CpuVariant& reference_cpu_variant(const std::vector<CpuVariant>& variants);

// Registers the variant's backend with ggml (the only CPU backend then); throws if it cannot load.
void load_cpu_variant(const CpuVariant& variant);

}  // namespace oracle
