// GGUF v2/v3 reader (validating, zero-copy over a mapping) and writer.
//
// The reader checks everything a hostile file could get wrong: truncation, lengths and counts
// beyond the file, integer overflow in sizes and offsets, duplicate keys and tensor names,
// unknown value types, bool bytes other than 0/1, nesting depth, tensor dims and types,
// alignment, tensor data outside the file or overlapping. Any problem throws channel::Error
// with one line naming it (and the key or tensor involved), prefixed by the file's origin.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "model/ggml_type.h"

namespace channel {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

// Short name of a value type for messages ("u32", "string", "array", ...).
std::string_view gguf_value_type_name(GgufValueType type);

struct GgufArray;

// One metadata value. Strings are views into the file's bytes (valid while the GgufFile lives;
// owned copies for values built by the writer). `data` holds uint64_t for the unsigned types,
// int64_t for the signed ones, double for FLOAT32/FLOAT64, then bool, string_view and array.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  std::variant<uint64_t, int64_t, double, bool, std::string_view, std::shared_ptr<GgufArray>> data;
  std::shared_ptr<std::string> owned_string;  // keeps writer-built strings alive

  static GgufValue u8(uint8_t v);
  static GgufValue i8(int8_t v);
  static GgufValue u16(uint16_t v);
  static GgufValue i16(int16_t v);
  static GgufValue u32(uint32_t v);
  static GgufValue i32(int32_t v);
  static GgufValue u64(uint64_t v);
  static GgufValue i64(int64_t v);
  static GgufValue f32(float v);
  static GgufValue f64(double v);
  static GgufValue boolean(bool v);
  static GgufValue string(std::string v);
  static GgufValue array(GgufValueType element_type, std::vector<GgufValue> elements);

  // Typed reads with conversion checks; throw channel::Error (naming `what`) on a type
  // mismatch or an integer that does not fit.
  int64_t as_int(std::string_view what) const;      // any integer type
  double as_float(std::string_view what) const;     // FLOAT32/FLOAT64 (and integers)
  bool as_bool(std::string_view what) const;
  std::string_view as_string(std::string_view what) const;
  const GgufArray& as_array(std::string_view what) const;

  // Same type and same value, arrays element by element. Floats compare by bit pattern, so a
  // NaN equals itself and 0.0 differs from -0.0: "would encode the same", not IEEE equality.
  friend bool operator==(const GgufValue& a, const GgufValue& b);
};

struct GgufArray {
  GgufValueType element_type = GgufValueType::UINT8;
  std::vector<GgufValue> elements;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;   // ne[0] first (contiguous), 1..4 entries, each >= 1
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;         // relative to the start of the data section
  uint64_t n_bytes = 0;        // computed from dims and type
  int64_t n_elements() const;
};

class GgufFile {
 public:
  // Maps and parses a file. Tensors of types this engine cannot compute with are refused with
  // an error naming the tensor and the type.
  static GgufFile open(const std::string& path);
  // Parses bytes owned by the caller (fuzzing, tests); they must outlive the GgufFile.
  static GgufFile parse(std::span<const uint8_t> bytes, std::string_view origin = "<memory>");

  // A file made of parts held elsewhere, as if written and read back: the metadata and tensor
  // table a converter would write, each tensor's bytes wherever they are (a Hugging Face
  // directory's safetensors mappings, or buffers of converted values). `owner` keeps all of them
  // alive. Each tensor's bytes must be its n_bytes (checked); names and keys must be unique
  // (checked). The tensors' offsets mean nothing here. `source_name` gives, for a tensor name
  // (present or not), what the parts call it, so that errors can say so ("" where nothing does).
  struct PlacedTensor {
    GgufTensorInfo info;
    std::span<const uint8_t> bytes;
  };
  static GgufFile assemble(std::string origin, std::vector<std::pair<std::string, GgufValue>> metadata,
                           std::vector<PlacedTensor> tensors, std::shared_ptr<const void> owner,
                           std::function<std::string(std::string_view)> source_name = {});

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& origin() const { return origin_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  const GgufValue& require(std::string_view key) const;  // throws "missing metadata key 'k'"

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  const GgufTensorInfo& require_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& tensor) const;
  // The file's mapping (null for parse() and assemble()).
  const MappedFile* mapping() const { return mapping_.get(); }
  // A tensor name for error messages: 'name', and for an assembled file what its source calls it
  // ("'blk.0.attn_q.weight' (model.layers.0.self_attn.q_proj.weight)").
  std::string tensor_label(std::string_view name) const;

 private:
  std::shared_ptr<MappedFile> mapping_;  // null for parse() and assemble()
  std::shared_ptr<const void> owner_;    // what an assembled file's tensors and values point into
  std::function<std::string(std::string_view)> source_name_;  // assembled files: the parts' tensor names
  std::span<const uint8_t> bytes_;
  std::string origin_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::vector<std::span<const uint8_t>> tensor_data_;  // per tensor, in tensors_ order
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class GgufParser;
};

// Builds a GGUF v3 file. Keys and tensors are written in the order they were added. The data
// section is aligned to 32 bytes, or to `general.alignment` once that is set (a u32, a nonzero
// multiple of 8). Every check the reader makes is made here too, when a key or tensor is added,
// so whatever the writer writes reads back.
class GgufWriter {
 public:
  // Replaces an existing key in place. The writer keeps a deep copy of the value, strings
  // included, so values taken from a GgufFile may outlive that file.
  void set(std::string key, GgufValue value);
  // `data` must hold exactly ggml_row_bytes(type, dims[0]) * (product of other dims) bytes.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims, std::vector<uint8_t> data);
  // The same, with data that other tensors may share: a file that repeats a tensor's bytes
  // (benchmark models repeat layer matrices) holds them in memory once.
  void add_shared_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                         std::shared_ptr<const std::vector<uint8_t>> data);
  void write(const std::string& path) const;  // writes to path (throws channel::Error on I/O failure)
  std::vector<uint8_t> to_bytes() const;

 private:
  // Hands the file to `sink` piece by piece (metadata and tensor infos, then padding and each
  // tensor's data), so write() streams tensors to disk without building the whole file in memory.
  void emit(const std::function<void(std::span<const uint8_t>)>& sink) const;

  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::shared_ptr<const std::vector<uint8_t>> data;  // never null
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace channel
