"""The tokenizer of channel-tiny: Gemma 4's special and control tokens under their Gemma 4 names
and types, 256 byte tokens, and a BPE vocabulary trained on the corpus, run the way llama.cpp
runs tokenizer.ggml.model = "gemma4" (src/tokenizer/gemma4_bpe.h): spaces become U+2581, text
between special tokens is cut into runs of newlines and runs of anything else, and within a run
the ranked merges apply, lowest rank first, with <0xXX> byte tokens for what is left unknown.

Merges are learned inside words (a U+2581 only ever starts a word), so no merge joins two words
and encoding a run word by word gives llama.cpp's result; digits never merge, so numbers are
read digit by digit.

    python3 vocab.py --out vocab.json --conversations 20000   # train on the corpus
"""

import argparse
import collections
import json
import re

import corpus

SPACE = "\u2581"
NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6

# As in Gemma 4's vocabulary (ggml-vocab-gemma-4.gguf): names and token types.
SPECIAL_TOKENS = [
    ("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL), ("<unk>", CONTROL), ("<mask>", CONTROL),
    ("<|tool>", CONTROL), ("<tool|>", CONTROL), ("<|tool_call>", USER_DEFINED), ("<tool_call|>", USER_DEFINED),
    ("<|tool_response>", USER_DEFINED), ("<tool_response|>", USER_DEFINED), ('<|"|>', USER_DEFINED),
    ("<|think|>", CONTROL), ("<|channel>", USER_DEFINED), ("<channel|>", USER_DEFINED), ("<|turn>", CONTROL),
    ("<turn|>", CONTROL),
]
NEWLINES = ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]  # the engine finds "\n" and "\n\n" by name
# Every printable ASCII character is a token, so that no typed English falls back to bytes.
ASCII = [chr(c) for c in range(33, 127)] + [SPACE]
# One-token answers the probes score (their first token must be the whole word).
REQUIRED_WORDS = ["Yes", "No", "yes", "no"]

_WORD = re.compile(f"{SPACE}[^{SPACE}]*|[^{SPACE}]+")
_RUN = re.compile("\n+|[^\n]+")


def _special_pattern(names):
    return re.compile("(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + ")")


def words_of(text):
    """The words a stretch of plain text (no special tokens) is cut into, newline runs included."""
    out = []
    for run in _RUN.findall(text.replace(" ", SPACE)):
        out.extend([run] if run[0] == "\n" else _WORD.findall(run))
    return out


def train(texts, max_vocab):
    """The vocabulary dict {tokens, types, merges} of BPE on `texts` (plain text, special tokens
    already cut out), at most max_vocab tokens."""
    counts = collections.Counter(w for t in texts for w in words_of(t) if w[0] != "\n")
    for w in REQUIRED_WORDS:
        counts[w] += 1000  # as if frequent: they become whole tokens early
    tokens = [name for name, _ in SPECIAL_TOKENS] + [f"<0x{b:02X}>" for b in range(256)] + list(NEWLINES)
    types = [t for _, t in SPECIAL_TOKENS] + [BYTE] * 256 + [NORMAL] * len(NEWLINES)
    alphabet = sorted(set(ASCII) | {c for w in counts for c in w})
    tokens += alphabet
    types += [NORMAL] * len(alphabet)
    known = set(tokens)
    words = {tuple(w): n for w, n in counts.items()}
    merges = []
    while len(tokens) < max_vocab:
        pairs = collections.Counter()
        for symbols, n in words.items():
            for a, b in zip(symbols, symbols[1:]):
                if not (any(c.isdigit() for c in a) or any(c.isdigit() for c in b)):
                    pairs[a, b] += n
        if not pairs:
            break
        # Most frequent first; ties by text so that the vocabulary does not depend on hash order.
        (a, b), n = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < 2:
            break
        merges.append(f"{a} {b}")
        if a + b not in known:
            known.add(a + b)
            tokens.append(a + b)
            types.append(NORMAL)
        words = {_merge(symbols, a, b): n for symbols, n in words.items()}
    return {"tokens": tokens, "types": types, "merges": merges}


def _merge(symbols, a, b):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


class Tokenizer:
    def __init__(self, vocab):
        self.tokens = vocab["tokens"]
        self.types = vocab["types"]
        self.id = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(vocab["merges"])}
        specials = [t for t, ty in zip(self.tokens, self.types) if ty in (CONTROL, USER_DEFINED)]
        self._special = _special_pattern(specials)
        self._cache = {}
        self.bos, self.eos, self.pad = self.id["<bos>"], self.id["<eos>"], self.id["<pad>"]

    def encode(self, text, bos=False):
        """Token ids of `text`, special tokens parsed (as the engine encodes what it renders)."""
        out = [self.bos] if bos else []
        for i, part in enumerate(self._special.split(text)):
            if i % 2:
                out.append(self.id[part])
            elif part:
                for word in words_of(part):
                    out.extend(self._word(word))
        return out

    def _word(self, word):
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if word[0] == "\n" and word in self.id:
            ids = [self.id[word]]
        else:
            symbols = list(word)
            while len(symbols) > 1:
                best = min(range(len(symbols) - 1),
                           key=lambda k: self.ranks.get((symbols[k], symbols[k + 1]), float("inf")))
                if (symbols[best], symbols[best + 1]) not in self.ranks:
                    break
                symbols[best:best + 2] = [symbols[best] + symbols[best + 1]]
            ids = []
            for s in symbols:
                if s in self.id:
                    ids.append(self.id[s])
                else:
                    ids.extend(self.id[f"<0x{b:02X}>"] for b in s.encode("utf-8"))
        self._cache[word] = ids
        return ids

    def decode(self, ids):
        return "".join(self.tokens[i] for i in ids).replace(SPACE, " ")


def corpus_texts(n, seed=1):
    """Plain text of n training conversations, special tokens cut out."""
    names = [name for name, _ in SPECIAL_TOKENS]
    pattern = _special_pattern(names)
    texts = []
    for i in range(n):
        for text, _ in corpus.conversation(seed, i):
            texts.extend(p for j, p in enumerate(pattern.split(text)) if j % 2 == 0 and p)
    return texts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--conversations", type=int, default=20000)
    parser.add_argument("--max-vocab", type=int, default=4096)
    args = parser.parse_args()
    vocab = train(corpus_texts(args.conversations), args.max_vocab)
    with open(args.out, "w") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=0)
    print(f"{len(vocab['tokens'])} tokens, {len(vocab['merges'])} merges")


if __name__ == "__main__":
    main()
