// Generates the strings of the tokenizer parity test as a lines file (src/tokenizer/escapes.h):
// the lines cycle through accented Latin, other scripts, emoji, whitespace runs, code, numbers,
// punctuation, special tokens inside text, characters without a token, invalid UTF-8, mixtures of
// those and long mixtures, with choices made by a seeded generator, so a seed always gives the
// same file.
//
// Usage: make_tokenizer_lines SEED COUNT OUT
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/split_mix.h"
#include "tokenizer/escapes.h"

namespace {

// Draws from SplitMix64 (the same output with every standard library).
class Random {
 public:
  explicit Random(uint64_t seed) : generator_(seed) {}
  size_t below(size_t n) { return generator_.below(n); }
  size_t between(size_t low, size_t high) { return low + below(high - low + 1); }  // inclusive
  bool chance(size_t percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(std::span<const T> items) { return items[below(items.size())]; }

 private:
  channel::SplitMix64 generator_;
};

using Words = std::span<const std::string_view>;

constexpr std::string_view kLatin[] = {
    "Hello", "world", "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "café", "naïve",
    "über", "façade", "Ærøskøbing", "São", "Paulo", "jalapeño", "crème", "brûlée", "Ångström", "Zürich",
    "smörgåsbord", "déjà", "vu", "Łódź", "Dvořák", "Ñandú", "mañana", "İstanbul", "straße", "œuvre",
    "coöperate", "Évian", "garçon", "Tokenizer", "GEMMA", "llama", "don't", "it's", "we'll", "I'm"};
constexpr std::string_view kCyrillic[] = {"Привет", "мир", "Съешь", "же", "ещё", "этих", "мягких",
                                          "французских", "булок", "нещо", "на", "Български", "Україна",
                                          "ґанок", "ЁЛКА", "щъ"};
constexpr std::string_view kGreek[] = {"Γειά", "σου", "Κόσμε", "ξεσκεπάζω", "ψυχοφθόρα", "βδελυγμία",
                                       "αβγ", "ΩΜΈΓΑ", "ῥυθμός"};
constexpr std::string_view kArabic[] = {"مرحبا", "بالعالم", "اللغة", "العربية", "كتاب", "٣٤٥",
                                        "السَّلَامُ", "عَلَيْكُمْ", "؟"};
constexpr std::string_view kHebrew[] = {"שלום", "עולם", "עִבְרִית", "ספר", "תודה", "״", "׳"};
constexpr std::string_view kDevanagari[] = {"नमस्ते", "दुनिया", "हिन्दी", "क्षत्रिय", "१२३", "संस्कृतम्", "।"};
constexpr std::string_view kThai[] = {"สวัสดี", "ชาวโลก", "ภาษาไทย", "กรุงเทพมหานคร", "๑๒๓", "ฯ"};
constexpr std::string_view kCjk[] = {"你好", "世界", "日本語", "東京", "漢字", "中文分词", "こんにちは",
                                     "カタカナ", "ｶﾀｶﾅ", "，", "。", "「引用」", "龍", "𠮷野家"};
constexpr std::string_view kHangul[] = {"안녕하세요", "세계", "한국어", "ᄀᄁᄂ", "ㅋㅋㅋ", "똠방각하", "읽다"};
constexpr Words kScripts[] = {kCyrillic, kGreek, kArabic, kHebrew, kDevanagari, kThai, kCjk, kHangul};

constexpr std::string_view kEmoji[] = {
    "🦙", "😀", "🤖", "👍", "👍🏻", "👍🏽", "👍🏿", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🏴‍☠️", "❤️", "🇯🇵",
    "🇺🇸", "1️⃣", "🧑🏾‍🚀", "👁️‍🗨️", "🫠", "✨", "🙏🏼", "🤦‍♀️", "🐕‍🦺", "☺", "♥"};

constexpr std::string_view kWhitespace[] = {
    " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n ", "\n\t", " \t ",
    "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\x89", "\xe2\x80\x8b", "                "};

constexpr std::string_view kCode[] = {
    "int main(int argc, char** argv) {\n  return 0;\n}",
    "def f(x):\n    return [i * i for i in range(x) if i % 2 == 0]\n",
    "{\"name\": \"gemma\", \"layers\": 30, \"rope\": {\"base\": 1e6}}",
    "<div class=\"a\"><span id='b'>x &amp; y</span></div>",
    "for (auto& [k, v] : m) { std::cout << k << '=' << v << \"\\n\"; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "x = a->b ?: c; y <<= 2; z = !(p && q) || r;",
    "fn main() -> Result<(), Box<dyn Error>> { println!(\"{:?}\", v); Ok(()) }",
    "$ ls -la | grep -v '^d' > out.txt 2>&1",
    "\tif err != nil {\n\t\treturn nil, err\n\t}",
    "    # comment\n    pass\n\n\n",
    "const re = /^[a-z0-9_-]{3,16}$/i;"};

constexpr std::string_view kPunctuation[] = {
    "!", "!!!", "?", "???", "?!", ".", "...", "…", ",", ";", ":", "-", "---", "—", "–", "*", "***",
    "#", "###", "<<", ">>", "«", "»", "¿", "¡", "“", "”", "‘", "’", "(", ")", "[", "]", "{", "}",
    "@", "$", "%", "^", "&", "~", "`", "|", "\\", "/", "'", "\"", "_", "__", "==", "=>", "->", "::"};

constexpr std::string_view kSpecial[] = {
    "<|turn>", "<turn|>", "<|channel>", "<channel|>", "<bos>", "<eos>", "<pad>", "<unk>", "<mask>",
    "<start_of_turn>", "<end_of_turn>", "<|think|>", "<|tool>", "<tool|>", "<|tool_call>",
    "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>", "<|image|>", "<|image>",
    "<image|>", "<|audio>", "<|video|>", "</s>", "<s>", "<unused0>", "<unused42>", "<0x41>",
    "[multimodal]", "<|tur", "turn|>", "<|<|turn>>", "<<bos>>", "<|channel|>", "<bos><bos>",
    "<|turn>user\n", "<|turn>model\n<|channel>thought\n<channel|>"};

// Code point ranges with few or no tokens, to exercise the <0xXX> byte fallback.
struct Range {
  uint32_t first;
  uint32_t last;
};
constexpr Range kRareRanges[] = {
    {0x01, 0x1F},       {0x7F, 0x9F},       {0x300, 0x36F},     {0xE000, 0xF8FF},   {0xFFF0, 0xFFFF},
    {0x10000, 0x1007F}, {0x12000, 0x123FF}, {0x13000, 0x1342F}, {0x1D100, 0x1D1FF}, {0x20000, 0x2A6DF},
    {0x30000, 0x3134A}, {0xF0000, 0xFFFFD}, {0x10FFFE, 0x10FFFF}};

// Invalid UTF-8, chosen so that no sequence decodes to a space: llama.cpp aborts on a space that
// appears only after its UTF-8 decoding (it never expects one inside a BPE symbol).
constexpr std::string_view kInvalidUtf8[] = {
    "\x80", "\xbf", "\x80\x80", "\xc3(", "\xe2\x82(", "\xf0\x9f\x98(", "\xff", "\xfe", "\xf8\x88\x80\x80\x80",
    "\xed\xa0\x80", "\xed\xbf\xbf", "\xc1\x81", "\xe0\x80\xaf", "\xc0\x8a", "\xc0\x80", "\xc3", "\xe2\x82",
    "\xf0\x9f\x98"};
// Sequences that decode beyond U+10FFFF, which the Gemma 4 tokenizer refuses (so does
// llama.cpp): kept out of mixtures, where they would make whole long lines fail.
constexpr std::string_view kBeyondUnicode[] = {"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf7\xbf\xbf\xbf"};

std::string utf8_of(uint32_t code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
  return out;
}

std::string sentence(Random& random, Words words) {
  std::string out;
  for (size_t n = random.between(1, 12); n > 0; --n) {
    out += random.pick(words);
    if (n > 1) {
      out += random.chance(85) ? std::string_view(" ") : random.pick(Words(kPunctuation));
    }
  }
  return out;
}

std::string emoji(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 8); n > 0; --n) {
    out += random.pick(Words(kEmoji));
    if (random.chance(40)) {
      out += random.chance(50) ? std::string(" ") : random.pick(Words(kLatin));
    }
  }
  return out;
}

std::string whitespace_runs(Random& random) {
  std::string out = random.chance(50) ? std::string(random.pick(Words(kWhitespace))) : std::string();
  for (size_t n = random.between(1, 6); n > 0; --n) {
    out += random.pick(Words(kLatin));
    for (size_t k = random.between(1, 3); k > 0; --k) {
      out += random.pick(Words(kWhitespace));
    }
  }
  if (random.chance(30)) {
    out += std::string(random.between(1, 40), random.chance(50) ? ' ' : '\n');
  }
  return out;
}

std::string code(Random& random) {
  std::string out(random.pick(Words(kCode)));
  if (random.chance(50)) {
    out = std::string(random.between(0, 8), ' ') + out;  // indented
  }
  return out;
}

std::string numbers(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 5); n > 0; --n) {
    switch (random.below(5)) {
      case 0:  // a long number
        for (size_t k = random.between(1, 40); k > 0; --k) out += static_cast<char>('0' + random.below(10));
        break;
      case 1: out += std::to_string(random.below(100000)) + "." + std::to_string(random.below(1000)); break;
      case 2: out += "1,234,567"; break;
      case 3: out += "0x" + std::to_string(random.below(0xFFFF)) + "FF"; break;
      default: out += "-6.022e23"; break;
    }
    out += random.chance(70) ? " " : ", ";
  }
  return out;
}

std::string punctuation(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 10); n > 0; --n) {
    out += random.pick(Words(kPunctuation));
    if (random.chance(20)) out += ' ';
  }
  return out;
}

std::string special_tokens(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 6); n > 0; --n) {
    out += random.pick(Words(kSpecial));
    if (random.chance(70)) {
      out += random.chance(30) ? std::string(" ") : sentence(random, kLatin);
    }
  }
  return out;
}

std::string rare_characters(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 8); n > 0; --n) {
    const Range& range = random.pick(std::span<const Range>(kRareRanges));
    out += utf8_of(range.first + static_cast<uint32_t>(random.below(range.last - range.first + 1)));
    if (random.chance(30)) out += random.pick(Words(kLatin));
  }
  return out;
}

std::string invalid_utf8(Random& random) {
  std::string out;
  for (size_t n = random.between(1, 4); n > 0; --n) {
    if (random.chance(50)) out += random.pick(Words(kLatin));
    out += random.pick(Words(kInvalidUtf8));
  }
  return out;
}

constexpr size_t kPieceKinds = 10;

// A piece of text of one kind (0 .. kPieceKinds - 1).
std::string piece(Random& random, size_t kind) {
  switch (kind) {
    case 0: return sentence(random, kLatin);
    case 1: return sentence(random, random.pick(std::span<const Words>(kScripts)));
    case 2: return emoji(random);
    case 3: return whitespace_runs(random);
    case 4: return code(random);
    case 5: return numbers(random);
    case 6: return punctuation(random);
    case 7: return special_tokens(random);
    case 8: return rare_characters(random);
    default: return invalid_utf8(random);
  }
}

std::string mixture(Random& random, size_t min_pieces, size_t max_pieces) {
  std::string out;
  for (size_t n = random.between(min_pieces, max_pieces); n > 0; --n) {
    out += piece(random, random.below(kPieceKinds));
    if (random.chance(50)) out += random.pick(Words(kWhitespace));
  }
  return out;
}

// Lines cycle through the piece kinds, then a mixture, then a long mixture.
constexpr size_t kCategories = kPieceKinds + 2;

std::string line(Random& random, size_t index) {
  const size_t category = index % kCategories;
  if (category < kPieceKinds) {
    std::string out = piece(random, category);
    if (category == kPieceKinds - 1 && random.chance(20)) {
      out += random.pick(Words(kBeyondUnicode));
    }
    return out;
  }
  if (category == kPieceKinds) {
    return mixture(random, 2, 12);
  }
  const size_t length = 2000 + random.below(6000);  // several thousand bytes
  std::string out;
  while (out.size() < length) out += mixture(random, 4, 16);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SEED COUNT OUT\n", argv[0]);
    return 2;
  }
  Random random(std::strtoull(argv[1], nullptr, 10));
  const size_t count = std::strtoull(argv[2], nullptr, 10);
  std::ofstream out(argv[3], std::ios::binary);
  for (size_t i = 0; i < count; ++i) {
    out << channel::escape_line(line(random, i)) << '\n';
  }
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[3]);
    return 1;
  }
  return 0;
}
