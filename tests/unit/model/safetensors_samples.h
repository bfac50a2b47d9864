// Safetensors files as bytes, for the reader's tests and the fuzzer's seed corpus: the header
// length, the header padded with spaces to a multiple of 8 (as Hugging Face's writer does), the
// data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace channel::test {

inline std::vector<uint8_t> safetensors_bytes(std::string header, const std::vector<uint8_t>& data) {
  while (header.size() % 8 != 0) header.push_back(' ');
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

}  // namespace channel::test
