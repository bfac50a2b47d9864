#include "model/safetensors_directory.h"

#include <filesystem>

#include "core/error.h"
#include "model/json_file.h"

namespace channel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The index's weight_map: tensor name -> shard file name.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  const json index = read_json_file(index_path);
  const auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (map == index.end() || !map->is_object()) fail("{} has no \"weight_map\" object", index_path.string());
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, shard] : map->items()) {
    if (!shard.is_string()) fail("{}: the shard of '{}' is not a string", index_path.string(), name);
    const std::string file = shard.get<std::string>();
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
        file.find('\\') != std::string::npos) {
      fail("{}: the shard of '{}' ('{}') is not a file name in the directory", index_path.string(), name, file);
    }
    weight_map.emplace(name, file);
  }
  return weight_map;
}

}  // namespace

SafetensorsDirectory SafetensorsDirectory::open(const std::string& directory) {
  const fs::path dir(directory);
  SafetensorsDirectory result;
  const fs::path index_path = dir / kIndexFile;
  if (!fs::exists(index_path)) {
    if (!fs::exists(dir / kSingleFile)) fail("{} has neither {} nor {}", directory, kSingleFile, kIndexFile);
    result.files_.push_back(SafetensorsFile::open((dir / kSingleFile).string()));
    for (const SafetensorsTensor& t : result.files_.back().tensors()) {
      result.where_.emplace(t.name, Found{nullptr, &t});
    }
  } else {
    const std::map<std::string, std::string> weight_map = read_weight_map(index_path);
    std::map<std::string, size_t> shard_index;
    for (const auto& [name, shard] : weight_map) {
      if (shard_index.emplace(shard, shard_index.size()).second) {
        result.files_.push_back(SafetensorsFile::open((dir / shard).string()));
      }
    }
    for (const auto& [shard, i] : shard_index) {
      for (const SafetensorsTensor& t : result.files_[i].tensors()) {
        const auto listed = weight_map.find(t.name);
        if (listed == weight_map.end()) fail("{}: shard {} holds '{}', which the index does not list", directory, shard, t.name);
        if (listed->second != shard) {
          fail("{}: shard {} holds '{}', which the index places in {}", directory, shard, t.name, listed->second);
        }
        result.where_.emplace(t.name, Found{nullptr, &t});
      }
    }
    for (const auto& [name, shard] : weight_map) {
      if (!result.where_.contains(name)) fail("{}: the index places '{}' in {}, which does not hold it", directory, name, shard);
    }
  }
  // The files are in place now (no more reallocation): point each entry at its file.
  for (const SafetensorsFile& file : result.files_) {
    for (const SafetensorsTensor& t : file.tensors()) result.where_.at(t.name).file = &file;
  }
  return result;
}

SafetensorsDirectory::Found SafetensorsDirectory::find(std::string_view name) const {
  const auto it = where_.find(name);
  return it == where_.end() ? Found{} : it->second;
}

}  // namespace channel
