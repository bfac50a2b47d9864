// The frame every make_<name>_corpus program shares: `PROGRAM DIR` creates DIR and lets the
// program write its seed files there; errors are one line on stderr and a non-zero exit.
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <vector>

namespace channel::test {

inline void write_corpus_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Runs `write_seeds(dir)`; returns main's exit code (2: usage, 1: failure).
inline int run_corpus_maker(int argc, char** argv, const std::function<void(const std::filesystem::path&)>& write_seeds) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    write_seeds(dir);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  return 0;
}

}  // namespace channel::test
