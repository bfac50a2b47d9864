// GgufFile: the validating GGUF reader and its lookups.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "model/gguf.h"
#include "model/gguf_format.h"

namespace channel {
namespace {

// GGUF v2/v3 files are little-endian, and values are copied out of the mapping as they are.
static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

// A read position over the file's bytes. Every read is bounds-checked before it touches memory
// or allocates; `what` names the thing being read for the error message.
class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return bytes_.size() - position_; }

  std::span<const uint8_t> take(uint64_t n, std::string_view what) {
    if (n > remaining()) {
      fail("truncated file: {} needs {} bytes at offset {}, file has {}", what, n, position_, bytes_.size());
    }
    const auto taken = bytes_.subspan(position_, n);
    position_ += n;
    return taken;
  }

  template <typename T>
  T read(std::string_view what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what).data(), sizeof(T));
    return value;
  }

  // A u64 length, then that many bytes; `max_bytes` refuses absurd lengths with a clearer
  // message than "truncated".
  std::string_view read_string(std::string_view what, uint64_t max_bytes = UINT64_MAX) {
    const uint64_t length = read<uint64_t>(what);
    if (length > max_bytes) fail("{} is {} bytes long (at most {})", what, length, max_bytes);
    const auto chars = take(length, what);
    return {reinterpret_cast<const char*>(chars.data()), chars.size()};
  }

  // Refuses a count of items, each at least `min_item_bytes` long, that could not fit in the
  // rest of the file; called before reserving memory for them.
  void check_count(uint64_t count, uint64_t min_item_bytes, std::string_view what) {
    if (count > remaining() / min_item_bytes) {
      fail("truncated file: {} claims {} entries of at least {} bytes, but only {} bytes follow offset {}",
           what, count, min_item_bytes, remaining(), position_);
    }
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t position_ = 0;
};

// Smallest encodings, used to refuse impossible counts: a metadata entry is a key (u64 length), a
// u32 type and a value of at least one byte; a tensor info is a name (u64 length), a u32 dim
// count, a u32 type and a u64 offset. (Empty keys and names and zero dims are refused later,
// with their own messages, so the bounds do not assume them away.)
constexpr uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

uint64_t min_encoded_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::STRING: return 8;     // u64 length
    case GgufValueType::ARRAY: return 4 + 8;  // u32 element type, u64 count
    default: return gguf_format::fixed_size(type);
  }
}

}  // namespace

// Fills a GgufFile from its bytes, section by section. Friend of GgufFile.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : file_(file), cursor_(file.bytes_) {}

  void parse() {
    const auto [tensor_count, metadata_count] = parse_header();
    parse_metadata(metadata_count);
    parse_tensor_infos(tensor_count);
    locate_tensor_data();
  }

 private:
  struct Counts {
    uint64_t tensors;
    uint64_t metadata;
  };

  Counts parse_header() {
    const auto magic = cursor_.take(4, "magic");
    if (!std::equal(magic.begin(), magic.end(), gguf_format::kMagic.begin())) {
      fail("not a GGUF file (starts with bytes {:02x}, expected 47 47 55 46 \"GGUF\")",
           fmt::join(magic, " "));
    }
    const auto version = cursor_.read<uint32_t>("version");
    // A big-endian file's small version number reads here with its low 16 bits zero.
    if (version != 0 && (version & 0xffffu) == 0) {
      fail("big-endian GGUF (version field reads 0x{:08x}); only little-endian files are supported", version);
    }
    if (version < gguf_format::kOldestReadableVersion) {
      fail("GGUF version {} is not supported (only versions 2 and 3; re-convert the model)", version);
    }
    if (version > gguf_format::kWrittenVersion) {
      fail("GGUF version {} is newer than this reader (versions 2 and 3)", version);
    }
    file_.version_ = version;
    const auto tensor_count = cursor_.read<uint64_t>("tensor count");
    const auto metadata_count = cursor_.read<uint64_t>("metadata count");
    cursor_.check_count(tensor_count, kMinTensorInfoBytes, "the tensor count");
    cursor_.check_count(metadata_count, kMinMetadataEntryBytes, "the metadata count");
    return {tensor_count, metadata_count};
  }

  void parse_metadata(uint64_t count) {
    file_.metadata_.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      const std::string key_what = fmt::format("key of metadata entry {}", i);
      const std::string_view key = cursor_.read_string(key_what, gguf_format::kMaxKeyBytes);
      gguf_format::check_key(key);
      if (file_.metadata_index_.contains(key)) fail("duplicate metadata key {}", gguf_format::quote(key));

      const std::string value_what = fmt::format("metadata value of {}", gguf_format::quote(key));
      const auto type_id = cursor_.read<uint32_t>(value_what);
      GgufValue value = parse_value(type_id, value_what, 0);
      file_.metadata_index_.emplace(key, file_.metadata_.size());
      file_.metadata_.emplace_back(std::string(key), std::move(value));
    }
    if (const GgufValue* alignment = file_.find(gguf_format::kAlignmentKey)) {
      file_.alignment_ = gguf_format::alignment_from(*alignment);
    }
  }

  // `depth` counts the arrays around this value.
  GgufValue parse_value(uint32_t type_id, std::string_view what, int depth) {
    if (!gguf_format::is_value_type(type_id)) fail("{} has unknown value type {}", what, type_id);
    const auto type = static_cast<GgufValueType>(type_id);
    switch (type) {
      case GgufValueType::UINT8: return GgufValue::u8(cursor_.read<uint8_t>(what));
      case GgufValueType::INT8: return GgufValue::i8(cursor_.read<int8_t>(what));
      case GgufValueType::UINT16: return GgufValue::u16(cursor_.read<uint16_t>(what));
      case GgufValueType::INT16: return GgufValue::i16(cursor_.read<int16_t>(what));
      case GgufValueType::UINT32: return GgufValue::u32(cursor_.read<uint32_t>(what));
      case GgufValueType::INT32: return GgufValue::i32(cursor_.read<int32_t>(what));
      case GgufValueType::UINT64: return GgufValue::u64(cursor_.read<uint64_t>(what));
      case GgufValueType::INT64: return GgufValue::i64(cursor_.read<int64_t>(what));
      case GgufValueType::FLOAT32: return GgufValue::f32(cursor_.read<float>(what));
      case GgufValueType::FLOAT64: return GgufValue::f64(cursor_.read<double>(what));
      case GgufValueType::BOOL: {
        const auto byte = cursor_.read<uint8_t>(what);
        if (byte > 1) fail("{} has bool byte {} (must be 0 or 1)", what, byte);
        return GgufValue::boolean(byte == 1);
      }
      case GgufValueType::STRING:
        // A view into the file, not a copy: the vocabulary's strings cost no allocations.
        return {GgufValueType::STRING, cursor_.read_string(what), nullptr};
      case GgufValueType::ARRAY: return parse_array(what, depth + 1);
    }
    fail("internal error: unhandled value type {}", type_id);
  }

  GgufValue parse_array(std::string_view what, int depth) {
    if (depth > gguf_format::kMaxArrayDepth) {
      fail("{} nests arrays more than {} deep", what, gguf_format::kMaxArrayDepth);
    }
    const auto element_type_id = cursor_.read<uint32_t>(what);
    if (!gguf_format::is_value_type(element_type_id)) {
      fail("{} is an array of unknown value type {}", what, element_type_id);
    }
    const auto element_type = static_cast<GgufValueType>(element_type_id);
    const auto count = cursor_.read<uint64_t>(what);
    cursor_.check_count(count, min_encoded_size(element_type), what);
    std::vector<GgufValue> elements;
    elements.reserve(count);
    for (uint64_t i = 0; i < count; ++i) elements.push_back(parse_value(element_type_id, what, depth));
    return GgufValue::array(element_type, std::move(elements));
  }

  void parse_tensor_infos(uint64_t count) {
    file_.tensors_.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      const std::string name_what = fmt::format("name of tensor {}", i);
      const std::string_view name = cursor_.read_string(name_what, gguf_format::kMaxTensorNameBytes);
      gguf_format::check_tensor_name(name);
      if (file_.tensor_index_.contains(name)) fail("duplicate tensor {}", gguf_format::quote(name));

      const std::string what = fmt::format("info of tensor {}", gguf_format::quote(name));
      const auto n_dims = cursor_.read<uint32_t>(what);
      gguf_format::check_dim_count(name, n_dims);
      GgufTensorInfo info;
      info.name = name;
      // Dims are u64 on disk; one above INT64_MAX turns negative here and is refused as < 1.
      for (uint32_t d = 0; d < n_dims; ++d) {
        info.dims.push_back(std::bit_cast<int64_t>(cursor_.read<uint64_t>(what)));
      }
      const auto type_id = cursor_.read<uint32_t>(what);
      const auto layout = gguf_format::check_tensor(name, info.dims, type_id);
      info.type = layout.type;
      info.n_bytes = layout.n_bytes;
      info.offset = cursor_.read<uint64_t>(what);
      if (info.offset % file_.alignment_ != 0) {
        fail("tensor {} has offset {}, which is not a multiple of the alignment {}", gguf_format::quote(name),
             info.offset, file_.alignment_);
      }
      file_.tensor_index_.emplace(info.name, file_.tensors_.size());
      file_.tensors_.push_back(std::move(info));
    }
  }

  // The data section starts at the first aligned offset after the tensor infos. Every tensor must
  // lie inside the file and no two may share bytes.
  void locate_tensor_data() {
    const uint64_t file_size = file_.bytes_.size();
    file_.data_offset_ = gguf_format::align_up(cursor_.position(), file_.alignment_);
    if (file_.tensors_.empty()) return;
    if (file_.data_offset_ > file_size) {
      fail("truncated file: tensor data starts at offset {}, file has {}", file_.data_offset_, file_size);
    }
    const uint64_t data_size = file_size - file_.data_offset_;
    for (const auto& tensor : file_.tensors_) {
      if (tensor.offset > data_size || tensor.n_bytes > data_size - tensor.offset) {
        fail("tensor {} ({} bytes at data offset {}) lies outside the file: the data section has {} bytes",
             gguf_format::quote(tensor.name), tensor.n_bytes, tensor.offset, data_size);
      }
    }
    std::vector<size_t> by_offset(file_.tensors_.size());
    std::iota(by_offset.begin(), by_offset.end(), size_t{0});
    const auto& tensors = file_.tensors_;
    std::sort(by_offset.begin(), by_offset.end(),
              [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const auto& previous = tensors[by_offset[i - 1]];
      const auto& current = tensors[by_offset[i]];
      if (previous.offset + previous.n_bytes > current.offset) {
        fail("tensors {} and {} overlap in the data section", gguf_format::quote(previous.name),
             gguf_format::quote(current.name));
      }
    }
    for (const auto& tensor : tensors) {
      file_.tensor_data_.push_back(file_.bytes_.subspan(file_.data_offset_ + tensor.offset, tensor.n_bytes));
    }
  }

  GgufFile& file_;
  ByteCursor cursor_;
};

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t dim : dims) n *= dim;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  auto mapping = std::make_shared<MappedFile>(path);
  GgufFile file = parse(mapping->bytes(), path);
  file.mapping_ = std::move(mapping);
  return file;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, std::string_view origin) {
  GgufFile file;
  file.bytes_ = bytes;
  file.origin_ = origin;
  try {
    GgufParser(file).parse();
  } catch (const Error& error) {
    throw Error(fmt::format("{}: {}", origin, error.what()));
  }
  return file;
}

GgufFile GgufFile::assemble(std::string origin, std::vector<std::pair<std::string, GgufValue>> metadata,
                            std::vector<PlacedTensor> tensors, std::shared_ptr<const void> owner,
                            std::function<std::string(std::string_view)> source_name) {
  GgufFile file;
  file.origin_ = std::move(origin);
  file.owner_ = std::move(owner);
  file.source_name_ = std::move(source_name);
  file.version_ = gguf_format::kWrittenVersion;
  try {
    for (auto& [key, value] : metadata) {
      gguf_format::check_key(key);
      if (!file.metadata_index_.emplace(key, file.metadata_.size()).second) {
        fail("duplicate metadata key {}", gguf_format::quote(key));
      }
      file.metadata_.emplace_back(std::move(key), std::move(value));
    }
    file.tensors_.reserve(tensors.size());
    for (auto& [info, bytes] : tensors) {
      gguf_format::check_tensor_name(info.name);
      const auto layout = gguf_format::check_tensor(info.name, info.dims, static_cast<uint32_t>(info.type));
      if (layout.n_bytes != bytes.size()) {
        fail("tensor {} needs {} bytes but has {}", gguf_format::quote(info.name), layout.n_bytes, bytes.size());
      }
      if (file.tensor_index_.contains(info.name)) fail("duplicate tensor {}", gguf_format::quote(info.name));
      info.n_bytes = layout.n_bytes;
      info.offset = 0;
      file.tensor_index_.emplace(info.name, file.tensors_.size());
      file.tensors_.push_back(std::move(info));
      file.tensor_data_.push_back(bytes);
    }
  } catch (const Error& error) {
    throw Error(fmt::format("{}: {}", file.origin_, error.what()));
  }
  return file;
}

std::string GgufFile::tensor_label(std::string_view name) const {
  const std::string source = source_name_ ? source_name_(name) : std::string();
  return source.empty() ? gguf_format::quote(name) : fmt::format("{} ({})", gguf_format::quote(name), source);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::require(std::string_view key) const {
  if (const GgufValue* value = find(key)) return *value;
  fail("{}: missing metadata key {}", origin_, gguf_format::quote(key));
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::require_tensor(std::string_view name) const {
  if (const GgufTensorInfo* tensor = find_tensor(name)) return *tensor;
  fail("{}: missing tensor {}", origin_, gguf_format::quote(name));
}

std::span<const uint8_t> GgufFile::tensor_bytes(const GgufTensorInfo& tensor) const {
  // The parser checked every tensor of this file; this guards against an info from another file.
  const auto it = tensor_index_.find(tensor.name);
  if (it == tensor_index_.end() || tensors_[it->second].offset != tensor.offset ||
      tensors_[it->second].n_bytes != tensor.n_bytes) {
    fail("{}: tensor {} does not belong to this file", origin_, gguf_format::quote(tensor.name));
  }
  return tensor_data_[it->second];
}

}  // namespace channel
