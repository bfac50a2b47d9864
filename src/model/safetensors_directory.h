// The weights of a Hugging Face model directory: model.safetensors, or the shards that
// model.safetensors.index.json lists ("weight_map": tensor name -> shard file). Each shard is
// opened once; a tensor is found by name wherever it lives.
//
// The index is validated against the shards: every listed shard is a file name inside the
// directory (no path separators, no "..": an index cannot point outside it), every tensor it
// lists is in its shard, and no shard holds a tensor the index does not list or a tensor that
// another shard also holds. Errors name the directory and the fault.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/safetensors.h"

namespace channel {

class SafetensorsDirectory {
 public:
  static constexpr const char* kSingleFile = "model.safetensors";
  static constexpr const char* kIndexFile = "model.safetensors.index.json";

  // Opens the index's shards, or model.safetensors where there is no index.
  static SafetensorsDirectory open(const std::string& directory);

  struct Found {
    const SafetensorsFile* file = nullptr;
    const SafetensorsTensor* tensor = nullptr;
  };
  // The tensor of that name, or {nullptr, nullptr}.
  Found find(std::string_view name) const;
  const std::vector<SafetensorsFile>& files() const { return files_; }
  size_t tensor_count() const { return where_.size(); }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Found, std::less<>> where_;
};

}  // namespace channel
