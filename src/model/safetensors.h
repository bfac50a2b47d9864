// A Hugging Face safetensors file (the format of a model directory's model.safetensors and its
// shards): a little-endian u64 header length N, N bytes of JSON naming each tensor's dtype,
// shape and byte range, then the tensors' bytes. Tensors are used in place from the mapping, as
// GGUF ones are.
//
// Validated as the GGUF reader is, so that a corrupt or hostile file is one clear error and
// never a crash or a huge allocation: the header length inside the file and at most
// kMaxHeaderBytes (the format's own limit); the header a JSON object whose entries are tensors
// ({"dtype", "shape", "data_offsets"}) and an optional "__metadata__" object of strings; no name
// twice; dtypes BF16, F16 and F32 (what Gemma checkpoints hold); every shape's element count
// times the dtype's size equal to its byte range; the ranges covering the data exactly, without
// overlaps or holes (the format's rule against polyglot files).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "model/ggml_type.h"

namespace channel {

struct SafetensorsTensor {
  std::string name;
  GgmlType type = GgmlType::F32;  // F32, F16 or BF16
  std::vector<int64_t> shape;     // outermost first (PyTorch order; GGUF lists dims innermost first)
  uint64_t offset = 0;            // relative to the start of the data
  uint64_t n_bytes = 0;
  int64_t n_elements() const;
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps and parses a file; throws channel::Error naming the file and the fault.
  static SafetensorsFile open(const std::string& path);
  // Parses bytes owned by the caller (fuzzing, tests); they must outlive the SafetensorsFile.
  static SafetensorsFile parse(std::span<const uint8_t> bytes, std::string_view origin = "<memory>");

  const std::string& origin() const { return origin_; }
  // Tensors in the order of their bytes in the file.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  std::span<const uint8_t> tensor_bytes(const SafetensorsTensor& tensor) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<MappedFile> mapping_;  // null for parse()
  std::span<const uint8_t> bytes_;
  std::string origin_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace channel
