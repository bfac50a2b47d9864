// Writes the seed corpus of fuzz_safetensors: small files as Hugging Face writes them (metadata,
// tensors of each dtype, an empty tensor, a file without tensors).
// Usage: make_safetensors_corpus DIR
#include <string>
#include <vector>

#include "fuzz/corpus_maker.h"
#include "unit/model/safetensors_samples.h"

int main(int argc, char** argv) {
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    using channel::test::safetensors_bytes;
    const std::vector<std::pair<std::string, size_t>> samples = {
        {R"({"__metadata__":{"format":"pt"},"model.norm.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16},
        {R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"F16","shape":[2],"data_offsets":[12,16]},)"
         R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[16,16]}})",
         16},
        {"{}", 0},
    };
    for (size_t i = 0; i < samples.size(); ++i) {
      std::vector<uint8_t> data(samples[i].second);
      for (size_t b = 0; b < data.size(); ++b) data[b] = static_cast<uint8_t>(0x3f + b);
      channel::test::write_corpus_file(dir / ("seed_safetensors_" + std::to_string(i) + ".bin"),
                                       safetensors_bytes(samples[i].first, data));
    }
  });
}
