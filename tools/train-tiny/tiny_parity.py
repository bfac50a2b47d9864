"""Logits parity between Channel and llama.cpp on a channel-tiny GGUF (models/channel-tiny.gguf),
with no PyTorch: the CTest train_tiny_logits_parity. check_logits.py compares with PyTorch too and
so needs torch, which CI lacks.

The prompts are held-out corpus conversations (corpus.py's test split), tokenized by vocab.py's
encoder, the one the training data was made with (Channel's and llama.cpp's tokenizers agree with
it: train_tiny_tokenizer_parity), plus the same conversations run together into one prompt longer
than the 128-token sliding window, so both layer types see more than their window. Both engines
write all-position logits; llama.cpp runs its pinned CPU variant (parity_common.cpu_variants). The
Foundation thresholds of tests/parity/logits hold for the file's weight type: relative L2 error
per prompt, and argmax agreement over all positions together.

    python3 tiny_parity.py --channel build/channel --oracle build/tests/parity/logits/llama_oracle \\
        --model models/channel-tiny.gguf --vocab tools/train-tiny/vocab.json [--type q8_0]
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

import corpus
import vocab as vocab_lib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity", "logits"))
import parity_common  # noqa: E402

SEED = 5  # of the held-out conversations


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--channel", required=True)
    p.add_argument("--oracle", required=True, help="llama_oracle (tests/parity/logits)")
    p.add_argument("--model", required=True)
    p.add_argument("--vocab", required=True, help="the vocabulary the model was exported with (vocab.json)")
    p.add_argument("--type", choices=sorted(parity_common.THRESHOLDS), default="q8_0",
                   help="the model's weight type, which sets the thresholds")
    p.add_argument("--conversations", type=int, default=4)
    p.add_argument("--threads", default="2")
    args = p.parse_args()
    with open(args.vocab, encoding="utf-8") as f:
        tokenizer = vocab_lib.Tokenizer(json.load(f))
    texts = ["".join(t for t, _ in corpus.conversation(SEED, i, "test")) for i in range(args.conversations)]
    prompts = [tokenizer.encode(text, bos=True) for text in texts] + [tokenizer.encode("".join(texts), bos=True)]
    max_rel, min_argmax = parity_common.THRESHOLDS[args.type]
    variant = parity_common.cpu_variants(args.oracle, "reference").pinned
    failed = False
    same_rows = total_rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        ref_paths = [os.path.join(tmp, f"llama-{i}.f32") for i in range(len(prompts))]
        parity_common.oracle_eval(args.oracle, args.model, prompts, ref_paths, variant, threads=args.threads)
        for i, (tokens, ref_path) in enumerate(zip(prompts, ref_paths)):
            ours_path = os.path.join(tmp, f"channel-{i}.f32")
            parity_common.run([args.channel, "eval", "--model", args.model, "--tokens", ",".join(map(str, tokens)),
                               "--threads", args.threads, "--logits-out", ours_path])
            ours = np.fromfile(ours_path, dtype="<f4").reshape(len(tokens), -1)
            ref = parity_common.read_logits(ref_path, len(tokens), ours.shape[1])
            rel, max_abs, argmax = parity_common.compare_logits(ours, ref)
            same_rows += round(argmax * len(tokens))
            total_rows += len(tokens)
            print(f"prompt {i}: {len(tokens)} tokens; rel L2 {rel:.2e} (max {max_rel:.0e}), max abs {max_abs:.3e}, "
                  f"argmax {argmax:.3f}")
            failed |= not rel <= max_rel  # a NaN fails too
    overall = same_rows / total_rows
    print(f"argmax agreement over all {total_rows} positions: {overall:.4f} (min {min_argmax}); {parity_common.cpu_variants(args.oracle, variant).describe()}")
    failed |= overall < min_argmax
    print("FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
