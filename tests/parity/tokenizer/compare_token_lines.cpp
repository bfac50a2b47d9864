// Compares the ids llama.cpp and channel gave for each string of a lines file, line by line.
// Prints each mismatch with its string (as escaped in the lines file) and a summary; exits 1 if
// any line differs.
//
// Usage: compare_token_lines NAME LINES LLAMA_IDS CHANNEL_IDS
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

bool read_lines(const char* path, std::vector<std::string>& lines) {
  std::ifstream file(path, std::ios::binary);
  for (std::string line; std::getline(file, line);) {
    lines.push_back(line);
  }
  return static_cast<bool>(file) || file.eof();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s NAME LINES LLAMA_IDS CHANNEL_IDS\n", argv[0]);
    return 2;
  }
  std::vector<std::string> texts, expected, actual;
  if (!read_lines(argv[2], texts) || !read_lines(argv[3], expected) || !read_lines(argv[4], actual)) {
    std::fprintf(stderr, "cannot read the input files\n");
    return 2;
  }
  if (expected.size() != texts.size() || actual.size() != texts.size()) {
    std::fprintf(stderr, "%zu strings, but %zu results from llama.cpp and %zu from channel\n", texts.size(),
                 expected.size(), actual.size());
    return 1;
  }

  size_t identical = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (expected[i] == actual[i]) {
      ++identical;
      continue;
    }
    std::printf("mismatch on line %zu: %s\n  llama.cpp: %s\n  channel:   %s\n", i + 1, texts[i].c_str(),
                expected[i].c_str(), actual[i].c_str());
  }
  std::printf("%s: %zu strings, %zu identical\n", argv[1], texts.size(), identical);
  return identical == texts.size() ? 0 : 1;
}
