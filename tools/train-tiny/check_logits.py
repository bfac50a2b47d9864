"""Checks the exporter and the architecture mirror: Channel's logits on the exported GGUF against
model.py's on the same weights, for a few held-out conversations (longer than the sliding window,
so both layer types are exercised); with --oracle also llama.cpp's (tests/parity/logits'
llama_oracle) against Channel's, at the Foundation thresholds of tests/parity/logits.

    python3 check_logits.py --weights OUT --vocab vocab.json --gguf tiny-f32.gguf --channel build/channel \\
        [--oracle build/tests/parity/logits/llama_oracle] [--gguf-type q8_0]

Relative L2 errors are over a whole conversation's logits, as parity_common.py measures them.
Against PyTorch the F32 export must be within 1e-3 (Channel, like llama.cpp's CPU backend, keeps
K and V in f16 and evaluates GELU through an f16 table: that is the size of the difference).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

import corpus
import model as gemma
import vocab as vocab_lib
import weights

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "parity", "logits"))
import parity_common  # noqa: E402

PYTORCH_THRESHOLD = 1e-3  # F32 export only


def logits_of(command, out, n_tokens):
    subprocess.run(command + ["--logits-out", out], check=True, capture_output=True)
    return np.fromfile(out, dtype=np.float32).reshape(n_tokens, -1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--vocab", required=True)
    p.add_argument("--gguf", required=True, help="the export of --weights")
    p.add_argument("--gguf-type", choices=["f32", "q8_0"], default="f32")
    p.add_argument("--channel", required=True)
    p.add_argument("--oracle", help="llama_oracle, to compare with llama.cpp too")
    p.add_argument("--conversations", type=int, default=3)
    args = p.parse_args()
    with open(args.vocab) as f:
        tokenizer = vocab_lib.Tokenizer(json.load(f))
    config, state = weights.load(args.weights)
    net = gemma.Gemma4(config)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    net.eval()
    max_rel, min_argmax = parity_common.THRESHOLDS[args.gguf_type]
    failed = False
    for i in range(args.conversations):
        text = "".join(t for t, _ in corpus.conversation(seed=5, index=i, split="test"))
        tokens = tokenizer.encode(text, bos=True)
        with torch.no_grad():
            t = torch.tensor([tokens])
            expected = net(t, torch.arange(len(tokens))[None], torch.zeros_like(t))[0].numpy()
        ids = ",".join(map(str, tokens))
        with tempfile.TemporaryDirectory() as tmp:
            ours = logits_of([args.channel, "eval", "--model", args.gguf, "--tokens", ids],
                             os.path.join(tmp, "channel.f32"), len(tokens))
            rel, _, argmax = parity_common.compare_logits(ours, expected)
            line = f"conversation {i}: {len(tokens)} tokens; channel vs PyTorch rel L2 {rel:.2e}, argmax {argmax:.3f}"
            if args.gguf_type == "f32" and rel > PYTORCH_THRESHOLD:
                failed = True
            if args.oracle:
                ref = logits_of([args.oracle, "eval", "--model", args.gguf, "--tokens", ids],
                                os.path.join(tmp, "llama.f32"), len(tokens))
                rel_llama, _, argmax_llama = parity_common.compare_logits(ours, ref)
                rel_torch, _, _ = parity_common.compare_logits(ref, expected)
                line += (f"; channel vs llama.cpp rel L2 {rel_llama:.2e}, argmax {argmax_llama:.3f}"
                         f"; llama.cpp vs PyTorch rel L2 {rel_torch:.2e}")
                if rel_llama > max_rel or argmax_llama < min_argmax:
                    failed = True
        print(line)
    print("FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
