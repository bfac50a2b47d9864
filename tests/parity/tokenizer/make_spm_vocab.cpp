// Writes a SentencePiece ("llama") vocabulary, the kind Gemma 3 GGUFs carry, from the Gemma 4
// vocabulary, so the SentencePiece path can be compared with llama.cpp without a Gemma 3 file.
// All metadata is copied except the tokenizer model, the merges and the scores: the Gemma 4 scores
// are all equal, useless to SentencePiece, so a token made by a merge scores minus the merge's rank
// (earlier merges win, as in BPE), and any other token scores below all of them.
//
// Usage: make_spm_vocab GEMMA4_VOCAB.gguf OUT.gguf
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "model/gguf.h"

namespace {

using channel::GgufValue;
using channel::GgufValueType;

std::vector<float> scores_from_merges(const channel::GgufFile& vocab) {
  const auto& tokens = vocab.require("tokenizer.ggml.tokens").as_array("tokens").elements;
  const auto& merges = vocab.require("tokenizer.ggml.merges").as_array("merges").elements;

  std::vector<float> scores(tokens.size(), -2.0f * static_cast<float>(merges.size()));
  std::vector<bool> scored(tokens.size(), false);
  std::unordered_map<std::string_view, size_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) {
    ids.emplace(tokens[id].as_string("token"), id);
  }
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank].as_string("merge");
    const size_t separator = merge.find(' ', 1);
    if (separator == std::string_view::npos) {
      continue;
    }
    merged.assign(merge.substr(0, separator));
    merged.append(merge.substr(separator + 1));
    if (const auto it = ids.find(merged); it != ids.end() && !scored[it->second]) {
      scores[it->second] = -static_cast<float>(rank);
      scored[it->second] = true;
    }
  }
  return scores;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s GEMMA4_VOCAB.gguf OUT.gguf\n", argv[0]);
    return 2;
  }
  try {
    const channel::GgufFile gemma4 = channel::GgufFile::open(argv[1]);
    channel::GgufWriter writer;
    for (const auto& [key, value] : gemma4.metadata()) {
      if (key != "tokenizer.ggml.merges" && key != "tokenizer.ggml.scores") {
        writer.set(key, value);
      }
    }
    writer.set("tokenizer.ggml.model", GgufValue::string("llama"));
    writer.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));  // as in Gemma 3 files

    std::vector<GgufValue> scores;
    for (float score : scores_from_merges(gemma4)) {
      scores.push_back(GgufValue::f32(score));
    }
    writer.set("tokenizer.ggml.scores", GgufValue::array(GgufValueType::FLOAT32, std::move(scores)));
    writer.write(argv[2]);
  } catch (const channel::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
