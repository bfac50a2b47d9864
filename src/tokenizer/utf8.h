// UTF-8 handling exactly as llama.cpp's tokenizers do it (unicode.cpp), which is laxer than the
// standard: encoding must reproduce llama.cpp's ids for any input bytes, valid or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace channel::utf8 {

// Length of the sequence a lead byte announces, from its high nibble alone (llama.cpp's
// unicode_len_utf8): 1 for ASCII and for continuation bytes, 2, 3, or 4 for 0xF0..0xFF.
size_t sequence_length(uint8_t lead);

// Decodes `text` into code points and encodes them again, as llama.cpp's pre-tokenizer does before
// BPE: a byte that does not start a well-formed sequence becomes U+FFFD and decoding resumes at
// the next byte; overlong forms are decoded (so "\xC1\x81" becomes "A") and surrogates kept.
// Appends to `out`. Throws channel::Error for a sequence decoding above U+10FFFF, where llama.cpp
// throws as well.
void append_reencoded(std::string_view text, std::string& out);

}  // namespace channel::utf8
