// libFuzzer target for the safetensors reader. Any input must either parse or throw
// channel::Error. Whatever parses must hold up when every tensor byte is read and decoded (ASan
// checks the views into the input), and its tensors must tile the data exactly as the reader
// promises: each one's bytes its element count times its type's size, none overlapping.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/error.h"
#include "fuzz/fuzz_properties.h"
#include "model/quantize.h"
#include "model/safetensors.h"

namespace {

using channel::fuzz::violated;

using namespace channel;

uint64_t touch_everything(const SafetensorsFile& file, size_t input_bytes) {
  uint64_t sum = 0, covered = 0, next = 0;
  std::vector<float> values;
  for (const SafetensorsTensor& tensor : file.tensors()) {
    if (tensor.offset != next) violated("the tensors tile the data in order");
    next = tensor.offset + tensor.n_bytes;
    if (static_cast<uint64_t>(tensor.n_elements()) * ggml_type_traits(tensor.type).block_bytes != tensor.n_bytes) {
      violated("a tensor's bytes are its element count times its type's size");
    }
    const auto bytes = file.tensor_bytes(tensor);
    if (bytes.size() != tensor.n_bytes) violated("tensor_bytes has the tensor's size");
    for (uint8_t byte : bytes) sum += byte;
    values.resize(static_cast<size_t>(tensor.n_elements()));
    dequantize(tensor.type, bytes.data(), tensor.n_elements(), values.data());
    for (float v : values) sum += std::isnan(v) ? 1 : 0;
    covered += tensor.n_bytes;
  }
  if (covered > input_bytes) violated("the tensors fit in the input");
  for (const auto& [key, value] : file.metadata()) sum += key.size() + value.size();
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<SafetensorsFile> file;
  try {
    file.emplace(SafetensorsFile::parse({data, size}, "fuzz-input"));
  } catch (const Error&) {
    return 0;
  }
  volatile uint64_t sink = touch_everything(*file, size);
  (void)sink;
  return 0;
}
