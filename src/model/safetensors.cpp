#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace channel {
namespace {

using nlohmann::json;

constexpr uint64_t kLengthBytes = 8;
constexpr size_t kMaxDims = 8;

GgmlType dtype_of(const std::string& dtype, const std::string& tensor) {
  if (dtype == "F32") return GgmlType::F32;
  if (dtype == "F16") return GgmlType::F16;
  if (dtype == "BF16") return GgmlType::BF16;
  fail("tensor '{}' has dtype '{}'; Channel reads BF16, F16 and F32 safetensors", tensor, dtype);
}

uint64_t unsigned_of(const json& value, const std::string& tensor, const char* what) {
  if (!value.is_number_unsigned()) fail("tensor '{}': {} must hold non-negative integers", tensor, what);
  return value.get<uint64_t>();
}

SafetensorsTensor tensor_of(const std::string& name, const json& entry) {
  if (!entry.is_object()) fail("header entry '{}' is not an object", name);
  const auto field = [&](const char* key) -> const json& {
    const auto it = entry.find(key);
    if (it == entry.end()) fail("tensor '{}' has no \"{}\"", name, key);
    return *it;
  };
  SafetensorsTensor t;
  t.name = name;
  const json& dtype = field("dtype");
  if (!dtype.is_string()) fail("tensor '{}': dtype must be a string", name);
  t.type = dtype_of(dtype.get<std::string>(), name);

  const json& shape = field("shape");
  if (!shape.is_array() || shape.size() > kMaxDims) fail("tensor '{}': shape must be an array of at most {} sizes", name, kMaxDims);
  uint64_t elements = 1;
  for (const json& size : shape) {
    const uint64_t n = unsigned_of(size, name, "shape");
    if (n > (uint64_t{1} << 40) || (n != 0 && elements > (uint64_t{1} << 48) / n)) {
      fail("tensor '{}': shape is too large", name);
    }
    elements *= n;
    t.shape.push_back(static_cast<int64_t>(n));
  }
  const uint64_t expected_bytes = elements * ggml_type_traits(t.type).block_bytes;

  const json& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2) fail("tensor '{}': data_offsets must be [begin, end]", name);
  const uint64_t begin = unsigned_of(offsets[0], name, "data_offsets");
  const uint64_t end = unsigned_of(offsets[1], name, "data_offsets");
  if (end < begin) fail("tensor '{}': data_offsets end {} before begin {}", name, end, begin);
  if (end - begin != expected_bytes) {
    fail("tensor '{}': {} bytes for {} {} values of {} bytes", name, end - begin, elements, dtype.get<std::string>(),
         ggml_type_traits(t.type).block_bytes);
  }
  t.offset = begin;
  t.n_bytes = end - begin;
  return t;
}

std::map<std::string, std::string> metadata_of(const json& entry) {
  if (!entry.is_object()) fail("\"__metadata__\" is not an object");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_string()) fail("\"__metadata__\" entry '{}' is not a string", key);
    metadata.emplace(key, value.get<std::string>());
  }
  return metadata;
}

// The header's JSON, refusing a tensor name given twice (a plain parse keeps the last one).
json parse_header(std::string_view text) {
  std::set<std::string> names;
  std::string duplicate;
  const json::parser_callback_t refuse_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), refuse_duplicates);
  } catch (const json::exception& e) {
    fail("the header is not valid JSON ({})", e.what());
  }
  if (!duplicate.empty()) fail("tensor '{}' is named twice in the header", duplicate);
  if (!header.is_object()) fail("the header is not a JSON object");
  return header;
}

// The tensors' byte ranges, sorted, must tile the data from 0 to its end.
void check_ranges_tile(std::vector<SafetensorsTensor>& tensors, uint64_t data_bytes) {
  std::sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.n_bytes < b.n_bytes;
  });
  uint64_t next = 0;
  for (const SafetensorsTensor& t : tensors) {
    if (t.offset < next) fail("tensor '{}' overlaps the tensor before it (bytes {}..{})", t.name, t.offset, t.offset + t.n_bytes);
    if (t.offset > next) fail("bytes {}..{} of the data belong to no tensor (before '{}')", next, t.offset, t.name);
    next = t.offset + t.n_bytes;
  }
  if (next != data_bytes) fail("the tensors cover {} of the data's {} bytes", next, data_bytes);
}

}  // namespace

int64_t SafetensorsTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto mapping = std::make_shared<MappedFile>(path);
  SafetensorsFile file = parse(mapping->bytes(), path);
  file.mapping_ = std::move(mapping);
  return file;
}

SafetensorsFile SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string_view origin) {
  SafetensorsFile file;
  file.bytes_ = bytes;
  file.origin_ = std::string(origin);
  try {
    if (bytes.size() < kLengthBytes) fail("{} bytes: too short for the header length", bytes.size());
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | bytes[static_cast<size_t>(i)];
    if (header_bytes > kMaxHeaderBytes) fail("header length {} exceeds the format's {}", header_bytes, kMaxHeaderBytes);
    if (header_bytes > bytes.size() - kLengthBytes) {
      fail("header length {} runs past the end of the file ({} bytes)", header_bytes, bytes.size());
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + kLengthBytes), header_bytes);
    const json header = parse_header(text);
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        file.metadata_ = metadata_of(entry);
      } else {
        file.tensors_.push_back(tensor_of(name, entry));
      }
    }
    file.data_offset_ = kLengthBytes + header_bytes;
    check_ranges_tile(file.tensors_, bytes.size() - file.data_offset_);
  } catch (const Error& e) {
    fail("{}: not a valid safetensors file: {}", origin, e.what());
  }
  return file;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const uint8_t> SafetensorsFile::tensor_bytes(const SafetensorsTensor& tensor) const {
  return bytes_.subspan(static_cast<size_t>(data_offset_ + tensor.offset), static_cast<size_t>(tensor.n_bytes));
}

}  // namespace channel
