// libFuzzer target for the GGUF reader. Any input must either parse or throw channel::Error.
// Whatever parses must hold up when every value and every tensor byte is read (ASan checks the
// views into the input), and must write back through GgufWriter into a file that parses to the
// same metadata and tensors: the writer accepts all that the reader accepts, and no more.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "fuzz/fuzz_properties.h"
#include "model/gguf.h"
#include "model/quantize.h"
#include "unit/model/gguf_samples.h"

namespace {

using channel::fuzz::violated;

using namespace channel;

// Reads every part of `value` through the typed accessors; the sum keeps the reads alive.
uint64_t touch(const GgufValue& value) {
  switch (value.type) {
    case GgufValueType::STRING: {
      uint64_t sum = 0;
      for (char c : value.as_string("string")) sum += static_cast<unsigned char>(c);
      return sum;
    }
    case GgufValueType::ARRAY: {
      uint64_t sum = 0;
      for (const auto& element : value.as_array("array").elements) sum += touch(element);
      return sum;
    }
    case GgufValueType::BOOL: return value.as_bool("bool") ? 1 : 0;
    case GgufValueType::FLOAT32:
    case GgufValueType::FLOAT64: return std::isnan(value.as_float("float")) ? 1 : 0;
    default: try { return static_cast<uint64_t>(value.as_int("integer"));
      } catch (const Error&) {
        return 0;  // a u64 above INT64_MAX: refused by as_int, as documented
      }
  }
}

uint64_t touch_everything(const GgufFile& file) {
  uint64_t sum = 0;
  for (const auto& [key, value] : file.metadata()) sum += key.size() + touch(value);
  std::vector<float> values;
  for (const auto& tensor : file.tensors()) {
    const auto bytes = file.tensor_bytes(tensor);
    for (uint8_t byte : bytes) sum += byte;
    values.resize(static_cast<size_t>(tensor.n_elements()));
    dequantize(tensor.type, bytes.data(), tensor.n_elements(), values.data());
    for (float v : values) sum += std::isnan(v) ? 1 : 0;
  }
  return sum;
}

void check_rewrite(const GgufFile& file) {
  const auto bytes = test::rewrite(file).to_bytes();
  const GgufFile again = GgufFile::parse(bytes, "rewritten");  // an Error here escapes: a crash
  if (again.alignment() != file.alignment()) violated("alignment survives a rewrite");
  if (again.metadata() != file.metadata()) violated("metadata survives a rewrite");
  if (again.tensors().size() != file.tensors().size()) violated("tensor count survives a rewrite");
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const auto& a = file.tensors()[i];
    const auto& b = again.tensors()[i];
    if (a.name != b.name || a.dims != b.dims || a.type != b.type || a.n_bytes != b.n_bytes) {
      violated("tensor info survives a rewrite");
    }
    const auto data_a = file.tensor_bytes(a);
    const auto data_b = again.tensor_bytes(b);
    if (!std::equal(data_a.begin(), data_a.end(), data_b.begin(), data_b.end()))
      violated("tensor data survives a rewrite");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<GgufFile> file;
  try {
    file.emplace(GgufFile::parse({data, size}, "fuzz-input"));
  } catch (const Error&) {
    return 0;
  }
  volatile uint64_t sink = touch_everything(*file);
  (void)sink;
  check_rewrite(*file);
  return 0;
}
