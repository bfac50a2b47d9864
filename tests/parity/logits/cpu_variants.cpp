#include "cpu_variants.h"

#include <dlfcn.h>
#include <ggml-backend.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace oracle {
namespace {

// The score function a variant library exports (ggml-backend-impl.h, which is not public).
using ScoreFn = int (*)();

int variant_score(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 0;
  const auto score = reinterpret_cast<ScoreFn>(dlsym(handle, "ggml_backend_score"));
  const int result = score ? score() : 0;
  dlclose(handle);
  return result;
}

// Loading a variant runs its init; its registry entry then lists the features it was built with.
std::vector<std::string> variant_features(const std::string& path) {
  ggml_backend_reg_t reg = ggml_backend_load(path.c_str());
  if (!reg) throw std::runtime_error("cannot load " + path);
  std::vector<std::string> features;
  const auto get_features =
      reinterpret_cast<ggml_backend_get_features_t>(ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
  if (get_features) {
    for (const ggml_backend_feature* f = get_features(reg); f->name; ++f) features.emplace_back(f->name);
  }
  ggml_backend_unload(reg);
  return features;
}

bool has_feature(const CpuVariant& variant, const std::string& feature) {
  return std::find(variant.features.begin(), variant.features.end(), feature) != variant.features.end();
}

}  // namespace

std::vector<CpuVariant> supported_cpu_variants(const std::string& libdir) {
  const std::string prefix = "libggml-cpu-";
  std::vector<CpuVariant> variants;
  for (const auto& entry : std::filesystem::directory_iterator(libdir)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with(prefix) || !file.ends_with(".so")) continue;
    CpuVariant v{file.substr(prefix.size(), file.size() - prefix.size() - 3), entry.path().string(), 0, {}};
    v.score = variant_score(v.path);
    if (v.score == 0) continue;
    v.features = variant_features(v.path);
    variants.push_back(std::move(v));
  }
  if (variants.empty()) throw std::runtime_error("no llama.cpp CPU variant in " + libdir + " runs on this CPU");
  std::sort(variants.begin(), variants.end(), [](const CpuVariant& a, const CpuVariant& b) {
    return a.score != b.score ? a.score > b.score : a.name < b.name;
  });
  return variants;
}

const CpuVariant& default_cpu_variant(const std::vector<CpuVariant>& variants) { return variants.front(); }

const CpuVariant& reference_cpu_variant(const std::vector<CpuVariant>& variants) {
  // AMX_INT8: Intel's tile units (the sapphirerapids variant); FP16_VA: ARM half-precision
  // vector arithmetic. Both change results with the CPU rather than with the model.
  for (const CpuVariant& v : variants) {
    if (!has_feature(v, "AMX_INT8") && !has_feature(v, "FP16_VA")) return v;
  }
  throw std::runtime_error("every llama.cpp CPU variant here uses AMX or FP16 arithmetic: no reference variant");
}

void load_cpu_variant(const CpuVariant& variant) {
  if (!ggml_backend_load(variant.path.c_str())) throw std::runtime_error("cannot load " + variant.path);
}

}  // namespace oracle
