"""Tokenizer parity on the corpus vocabulary: the vocabulary is written as a vocab-only GGUF
(tokenizer.ggml.model = gemma4), and llama.cpp and channel tokenize the same lines (the strings
of the tokenizer parity test, and rendered conversations and held-out questions of the corpus),
with special tokens parsed; every line of ids must agree. vocab.py's own encoder, which made the
training data, must give channel's ids on the corpus lines.

    python3 test_tokenizer.py --llama build/tests/parity/tokenizer/llama_tokenize_lines \\
        --channel build/tests/parity/tokenizer/channel_tokenize_lines \\
        --make-lines build/tests/parity/tokenizer/make_tokenizer_lines --work /tmp/tok
"""

import argparse
import json
import os
import subprocess
import sys

import corpus
import export
import vocab as vocab_lib

HERE = os.path.dirname(os.path.abspath(__file__))


def escape_line(text):
    """src/tokenizer/escapes.h's lines format."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def corpus_lines():
    lines = []
    for split in ("train", "test"):
        for i in range(300):
            lines.append("".join(corpus.render(e) for e in corpus.conversation_events(seed=9, index=i, split=split)))
    for kind in corpus.KINDS:
        for item in corpus.corpus_items(kind, count=5):
            lines.append(item.user)
            lines.append(item.answer)
    return lines


def ids_of(path):
    with open(path) as f:
        return f.read().splitlines()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama", required=True)
    p.add_argument("--channel", required=True)
    p.add_argument("--make-lines", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--vocab", default=os.path.join(HERE, "vocab.json"))
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    with open(args.vocab) as f:
        vocab = json.load(f)
    gguf = os.path.join(args.work, "vocab.gguf")
    export.export_vocabulary(vocab, gguf)

    generic = os.path.join(args.work, "generic.txt")
    subprocess.run([args.make_lines, "20261203", "1200", generic], check=True)
    texts = corpus_lines()
    lines = os.path.join(args.work, "lines.txt")
    with open(generic, encoding="utf-8", errors="surrogateescape") as f:
        generic_lines = f.read().splitlines()
    with open(lines, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(generic_lines + [escape_line(t) for t in texts]) + "\n")

    outputs = {}
    for name, tool in (("llama", args.llama), ("channel", args.channel)):
        path = os.path.join(args.work, f"ids-{name}.txt")
        with open(path, "w") as f:
            subprocess.run([tool, gguf, lines], check=True, stdout=f)
        outputs[name] = ids_of(path)
    failures = 0
    n_lines = len(generic_lines) + len(texts)
    for name in outputs:
        if len(outputs[name]) != n_lines:
            sys.exit(f"{name}: {len(outputs[name])} lines of ids for {n_lines} strings")
    for i, (a, b) in enumerate(zip(outputs["llama"], outputs["channel"])):
        if a != b:
            failures += 1
            if failures <= 5:
                print(f"line {i + 1}: llama.cpp {a}\n         channel   {b}")
    print(f"llama.cpp and channel: {n_lines - failures} of {n_lines} lines agree")

    tokenizer = vocab_lib.Tokenizer(vocab)
    python_failures = 0
    for i, text in enumerate(texts):
        ours = " ".join(map(str, tokenizer.encode(text, bos=True)))
        if ours != outputs["channel"][len(generic_lines) + i]:
            python_failures += 1
            if python_failures <= 5:
                print(f"corpus line {i}: vocab.py {ours}\n               channel  {outputs['channel'][len(generic_lines) + i]}")
    print(f"vocab.py and channel: {len(texts) - python_failures} of {len(texts)} corpus lines agree")
    return 1 if failures or python_failures else 0


if __name__ == "__main__":
    sys.exit(main())
