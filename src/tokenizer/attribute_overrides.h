// llama.cpp adjusts token attributes by token text after reading token_type (in
// llama_vocab::impl::load): tokens that look like end-of-generation or fill-in-the-middle markers
// become control tokens, and a few known tokens are set back to user-defined or normal. Encoding
// depends on the result (control tokens are only recognised in text with parse_special, and are
// rendered only on request), so the same adjustments are made here.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/string_table.h"

namespace channel {

// `attrs` holds the token_attr bits derived from token_type, one per token of `texts`; `file` is
// asked for the fill-in-the-middle id keys, which switch off the detection by name.
void apply_llama_attribute_overrides(const GgufFile& file, const StringTable& texts,
                                     std::vector<uint8_t>& attrs);

}  // namespace channel
