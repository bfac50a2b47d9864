// Where the llama.cpp peer's Gemma 4 vocabulary is (installed by scripts/install-peer.sh), for
// tests that need the real vocabulary; they skip when it is absent.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>

namespace channel::testing {

inline std::optional<std::filesystem::path> peer_gemma4_vocab() {
  std::filesystem::path peer;
  if (const char* dir = std::getenv("CHANNEL_PEER_DIR")) {
    peer = dir;
  } else if (const char* home = std::getenv("HOME")) {
    peer = std::filesystem::path(home) / ".cache" / "channel-peer";
  }
  const std::filesystem::path vocab = peer / "src" / "models" / "ggml-vocab-gemma-4.gguf";
  if (peer.empty() || !std::filesystem::exists(vocab)) {
    return std::nullopt;
  }
  return vocab;
}

}  // namespace channel::testing
