// Small synthesized models for tests that need a whole model but not a real vocabulary.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/synthesizer.h"

namespace channel::testing {

// A temporary directory removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "channel-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes a vocabulary GGUF of `n_tokens` plain tokens (no merges: enough for the model, which
// only needs the vocabulary size).
inline std::string write_small_vocab(const TempDir& dir, int n_tokens = 512) {
  GgufWriter writer;
  std::vector<GgufValue> tokens;
  for (int i = 0; i < n_tokens; ++i) tokens.push_back(GgufValue::string("tok" + std::to_string(i)));
  writer.set("tokenizer.ggml.model", GgufValue::string("gemma4"));
  writer.set("tokenizer.ggml.tokens", GgufValue::array(GgufValueType::STRING, std::move(tokens)));
  const std::string path = dir.file("vocab.gguf");
  writer.write(path);
  return path;
}

// A Gemma 4 mixture of experts: every layer routes each token to 3 of 8 experts of 64 hidden units.
inline SynthOptions moe_options(GgmlType type = GgmlType::F32) {
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.weight_type = o.embedding_type = type;
  o.n_expert = 8;
  o.n_expert_used = 3;
  o.n_ff_exp = 64;
  return o;
}

inline std::string synthesize(const TempDir& dir, SynthOptions options, const std::string& name) {
  if (options.vocab_path.empty()) options.vocab_path = write_small_vocab(dir);
  const std::string path = dir.file(name);
  synthesize_model(options, path);
  return path;
}

}  // namespace channel::testing
