"""Checks the exporter and the architecture mirror together: Channel's logits on the exported
F32 GGUF against model.py's on the same weights, for a few held-out conversations (longer than
the sliding window, so both layer types are exercised). Fails above a relative L2 error of 1e-3
over a conversation.

    python3 check_logits.py --weights OUT --vocab vocab.json --gguf tiny-f32.gguf --channel build/channel
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
import weights
import vocab as vocab_lib

THRESHOLD = 1e-3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--vocab", required=True)
    p.add_argument("--gguf", required=True, help="the F32 export of --weights")
    p.add_argument("--channel", required=True)
    p.add_argument("--conversations", type=int, default=3)
    args = p.parse_args()
    with open(args.vocab) as f:
        tokenizer = vocab_lib.Tokenizer(json.load(f))
    config, state = weights.load(args.weights)
    net = gemma.Gemma4(config)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    net.eval()
    worst = 0.0
    for i in range(args.conversations):
        text = "".join(t for t, _ in corpus.conversation(seed=5, index=i, split="test"))
        tokens = tokenizer.encode(text, bos=True)
        with torch.no_grad():
            t = torch.tensor([tokens])
            expected = net(t, torch.arange(len(tokens))[None], torch.zeros_like(t))[0].numpy()
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "logits.f32")
            subprocess.run([args.channel, "eval", "--model", args.gguf, "--tokens", ",".join(map(str, tokens)),
                            "--logits-out", out], check=True, capture_output=True)
            got = np.fromfile(out, dtype=np.float32).reshape(len(tokens), -1)
        # Over the whole sequence, as tests/parity/logits/parity_common.py measures it.
        rel = float(np.linalg.norm((got - expected).astype(np.float64)) / np.linalg.norm(expected.astype(np.float64)))
        same_argmax = float((got.argmax(1) == expected.argmax(1)).mean())
        print(f"conversation {i}: {len(tokens)} tokens, rel L2 {rel:.2e}, argmax agreement {same_argmax:.3f}")
        worst = max(worst, rel)
    print(f"worst rel L2 {worst:.2e} (threshold {THRESHOLD})")
    return 0 if worst <= THRESHOLD else 1


if __name__ == "__main__":
    sys.exit(main())
