#!/usr/bin/env python3
"""Quantization on load against llama.cpp's quantizer.

For each architecture Channel synthesizes an F32 random-weight model (and, with --sources, the same
model in F16 or BF16). Each of Channel's load conversions is matched with the llama_model_quantize
settings that should give the same weights (`llama-quantize --pure` with the output and
token-embedding overrides):

    --q4           q4_0, output q8_0, token embeddings bf16
    --q8           q8_0, output q8_0, token embeddings bf16
    --quant TYPE   TYPE everywhere

`channel eval FLAG` on the source file must then give logits byte-identical to `channel eval` on
llama.cpp's quantized file, on a random prompt: both run the same kernels, so any difference is a
weight that was converted differently. One deliberate difference is skipped, not judged: llama.cpp
converts F16 to BF16 and back, which Channel does not (a conversion on load only narrows: F16 and
BF16 are as wide as each other). Exits non-zero if any case differs or fails to run.
"""
import argparse
import sys
from pathlib import Path

from parity_common import ARCH_SYNTH_FLAGS, DEFAULT_ARCHS, comma_list, existing_file, labelled_ids, make_prompt, run, gguf_array_length

# Channel's flags -> llama_oracle quantize arguments.
CONVERSIONS = {
    "q4": (["--q4"], ["--type", "q4_0", "--output-type", "q8_0", "--token-embedding-type", "bf16"]),
    "q8": (["--q8"], ["--type", "q8_0", "--output-type", "q8_0", "--token-embedding-type", "bf16"]),
    "quant-q4_0": (["--quant", "q4_0"], ["--type", "q4_0"]),
    "quant-q8_0": (["--quant", "q8_0"], ["--type", "q8_0"]),
    "quant-f16": (["--quant", "f16"], ["--type", "f16"]),
    "quant-bf16": (["--quant", "bf16"], ["--type", "bf16"]),
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--channel", required=True, type=existing_file, help="the channel binary")
    parser.add_argument("--oracle", required=True, type=existing_file, help="the llama_oracle binary")
    parser.add_argument("--vocab", required=True, type=existing_file, help="Gemma 4 vocabulary GGUF")
    parser.add_argument("--workdir", required=True, type=Path, help="models and logits go here")
    parser.add_argument("--archs", type=comma_list(str), default=list(DEFAULT_ARCHS))
    parser.add_argument("--conversions", type=comma_list(str), default=list(CONVERSIONS))
    parser.add_argument("--sources", type=comma_list(str), default=["f32"], help="stored types of the source models")
    parser.add_argument("--prompt-length", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", default="cpu", help="Channel's backend for channel eval (cpu or vulkan)")
    args = parser.parse_args()
    for name, known in (("archs", ARCH_SYNTH_FLAGS), ("conversions", CONVERSIONS)):
        unknown = set(getattr(args, name)) - set(known)
        if unknown:
            parser.error(f"unknown {name} {sorted(unknown)} (known: {', '.join(known)})")
    return args


def llama_crosses_half_types(source_type, quantize_args):
    """Whether llama.cpp would convert an F16 source to BF16 or a BF16 source to F16."""
    other_half = {"f16": "bf16", "bf16": "f16"}.get(source_type)
    return other_half is not None and other_half in quantize_args


def channel_logits(args, model, flags, tokens, out):
    run([args.channel, "eval", "--model", model, "--backend", args.backend, *flags,
         "--tokens", ",".join(map(str, tokens)), "--logits-out", out])
    return Path(out).read_bytes()


def main():
    args = parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    n_vocab = gguf_array_length(args.vocab, "tokenizer.ggml.tokens")
    tokens = make_prompt(args.prompt_length, n_vocab, args.seed)
    failures = 0
    for arch in args.archs:
        for source_type in args.sources:
            source = args.workdir / f"{arch}-{source_type}.gguf"
            run([args.channel, "model", "synth", *ARCH_SYNTH_FLAGS[arch], "--vocab", args.vocab, "--out", source,
                 "--type", source_type, "--seed", args.seed])
            for name in args.conversions:
                channel_flags, quantize_args = CONVERSIONS[name]
                case = f"{arch} {source_type} {name}"
                if llama_crosses_half_types(source_type, quantize_args):
                    print(f"{case}: skipped (llama.cpp converts between F16 and BF16; Channel only narrows)")
                    continue
                try:
                    quantized = args.workdir / f"{arch}-{source_type}-{name}.gguf"
                    run([args.oracle, "quantize", "--model", source, "--out", quantized, *quantize_args])
                    ours = channel_logits(args, source, channel_flags, tokens, args.workdir / "ours.bin")
                    reference = channel_logits(args, quantized, [], tokens, args.workdir / "reference.bin")
                    identical = ours == reference
                    print(f"{case}: {'identical' if identical else 'DIFFERENT'} logits "
                          f"({len(tokens)} positions)")
                    failures += not identical
                    quantized.unlink()
                except RuntimeError as error:
                    print(f"{case}: FAILED TO RUN\n{error}")
                    failures += 1
            source.unlink()
    print(f"{failures} case(s) failed" if failures else "all cases identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
