#!/usr/bin/env python3
"""Logits parity between Channel and llama.cpp.

For each architecture and weight type, Channel synthesizes a random-weight model; random prompts of
each length (starting with BOS) are then evaluated by `channel eval` and by llama_oracle (llama.cpp),
and their all-position logits compared: relative L2 error ||ours - ref|| / ||ref|| over all logits,
the largest absolute difference, and the fraction of positions whose argmax agrees. The relative
L2 threshold applies to every prompt; the argmax threshold to all positions of a model's prompts
together (372 positions for prompts of 1, 7, 64 and 300 tokens), since a prompt of 1 or 7 positions
can only agree 0%/100% or in steps of 14%; the per-prompt agreement is reported beside it. For F32
models the greedy continuations are compared too. Prints a table, writes it to WORKDIR/parity.md as
markdown, and exits non-zero if any case misses its threshold or fails to run.
"""
import argparse
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

BOS_ID = 2
# weight type -> (largest relative L2 error, smallest fraction of positions with the same argmax)
THRESHOLDS = {
    "f32": (5e-3, 0.98),
    "f16": (5e-3, 0.98),
    "bf16": (5e-3, 0.98),
    "q8_0": (2e-2, 0.90),
    "q4_0": (2e-2, 0.90),
}
GREEDY_TYPES = {"f32"}  # only unquantized F32 is expected to reproduce llama.cpp's greedy tokens exactly


def comma_list(convert):
    return lambda text: [convert(item) for item in text.split(",") if item]


def existing_file(text):
    """An absolute path (a bare relative name would be looked up on PATH when run) to a file."""
    path = Path(text).resolve()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no file {text}")
    return path


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--channel", required=True, type=existing_file, help="the channel binary")
    parser.add_argument("--oracle", required=True, type=existing_file, help="the llama_oracle binary")
    parser.add_argument("--vocab", required=True, type=existing_file, help="Gemma 4 vocabulary GGUF")
    parser.add_argument("--workdir", required=True, type=Path, help="models, logits and parity.md go here")
    parser.add_argument("--types", type=comma_list(str), default=list(THRESHOLDS), help="weight types")
    parser.add_argument("--archs", type=comma_list(str), default=["gemma3", "gemma4"])
    parser.add_argument("--prompt-lengths", type=comma_list(int), default=[1, 7, 64, 300])
    parser.add_argument("--greedy", type=int, default=64, help="greedy tokens compared for F32 models (0: none)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the models and prompts")
    parser.add_argument("--backend", default="cpu", help="Channel's backend for channel eval (cpu or vulkan)")
    args = parser.parse_args()
    unknown = set(args.types) - set(THRESHOLDS)
    if unknown:
        parser.error(f"no thresholds for weight types {sorted(unknown)}")
    if min(args.prompt_lengths) < 1:
        parser.error("prompt lengths must be at least 1 (the BOS)")
    return args


def run(command):
    """Runs a command and returns its stdout; on failure raises with its stderr (or stdout)."""
    command = [str(part) for part in command]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stderr.strip() or result.stdout.strip())[-2000:]
        raise RuntimeError(f"exit {result.returncode}: {' '.join(command)}" + (f"\n{output}" if output else ""))
    return result.stdout


def labelled_ids(stdout, label):
    """The token ids on the line "LABEL: id id ..." that channel eval and llama_oracle print."""
    for line in stdout.splitlines():
        if line.startswith(label + ":"):
            return [int(word) for word in line[len(label) + 1:].split()]
    raise ValueError(f"no '{label}:' line in the output:\n{stdout[-2000:]}")


def gguf_array_length(path, key):
    """Number of elements of the array-valued metadata `key` of a GGUF file."""
    scalar_sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    string_type, array_type = 8, 9
    with open(path, "rb") as f:
        def unpack(fmt):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))

        def skip_value(value_type):
            if value_type == string_type:
                f.seek(unpack("<Q")[0], 1)
            elif value_type == array_type:
                element_type, count = unpack("<IQ")
                if element_type in scalar_sizes:
                    f.seek(count * scalar_sizes[element_type], 1)
                else:
                    for _ in range(count):
                        skip_value(element_type)
            else:
                f.seek(scalar_sizes[value_type], 1)

        magic, version, _n_tensors, n_kv = unpack("<4sIQQ")
        if magic != b"GGUF" or version < 2:
            raise ValueError(f"{path} is not a GGUF v2+ file")
        for _ in range(n_kv):
            name = f.read(unpack("<Q")[0]).decode()
            (value_type,) = unpack("<I")
            if name == key and value_type == array_type:
                return unpack("<IQ")[1]
            skip_value(value_type)
    raise KeyError(f"{path} has no array {key}")


def make_prompt(length, n_vocab, seed):
    """BOS then uniformly random ids: every id is a valid input for a random-weight model."""
    rng = np.random.default_rng([seed, length])
    return [BOS_ID] + rng.integers(0, n_vocab, size=length - 1).tolist()


def compare_logits(ours, ref):
    """(relative L2 error, max abs error, fraction of rows with the same argmax) of two
    n_tokens x n_vocab matrices, accumulated in float64 a few rows at a time to bound memory."""
    diff_sq = ref_sq = max_abs = 0.0
    rows_per_step = 16
    for start in range(0, ref.shape[0], rows_per_step):
        a = ours[start:start + rows_per_step].astype(np.float64)
        b = ref[start:start + rows_per_step].astype(np.float64)
        d = a - b
        diff_sq += float(np.sum(d * d))
        ref_sq += float(np.sum(b * b))
        max_abs = float(np.max([max_abs, np.max(np.abs(d))]))  # np.max, unlike max, keeps a NaN
    same_argmax = float(np.mean(np.argmax(ours, axis=1) == np.argmax(ref, axis=1)))
    rel_l2 = np.sqrt(diff_sq / ref_sq) if ref_sq > 0 else (0.0 if diff_sq == 0 else float("inf"))
    return float(rel_l2), max_abs, same_argmax


def read_logits(path, n_tokens, n_vocab):
    logits = np.fromfile(path, dtype="<f4")
    if logits.size != n_tokens * n_vocab:
        raise ValueError(f"{path}: {logits.size} floats, expected {n_tokens} x {n_vocab}")
    return logits.reshape(n_tokens, n_vocab)


@dataclass
class Case:
    arch: str
    wtype: str
    prompt_length: int
    rel_l2: Optional[float] = None  # None until the logits were compared
    max_abs: Optional[float] = None
    same_argmax: Optional[float] = None
    model_same_argmax: Optional[float] = None  # over all positions of the model's prompts
    greedy: str = "-"  # "matched/requested" tokens, or "-" when not compared
    error: str = ""
    passed: bool = False

    greedy_ok: bool = True

    def judge(self):
        max_rel_l2, min_same_argmax = THRESHOLDS[self.wtype]
        self.passed = (not self.error and self.rel_l2 is not None and self.rel_l2 <= max_rel_l2 and
                       self.model_same_argmax >= min_same_argmax and self.greedy_ok)


def run_case(case, args, model, n_vocab):
    tokens = make_prompt(case.prompt_length, n_vocab, args.seed)
    common = ["--model", model, "--tokens", ",".join(map(str, tokens))]
    greedy = args.greedy if case.wtype in GREEDY_TYPES else 0
    ours_path = args.workdir / "channel.logits"
    ref_path = args.workdir / "oracle.logits"
    try:
        # channel eval continues greedily from the same prompt evaluation when asked to
        greedy_flag = ["--greedy", greedy] if greedy else []
        ours_out = run([args.channel, "eval", *common, "--backend", args.backend, "--logits-out", ours_path,
                        *greedy_flag])
        run([args.oracle, "eval", *common, "--logits-out", ref_path])
        case.rel_l2, case.max_abs, case.same_argmax = compare_logits(
            read_logits(ours_path, len(tokens), n_vocab), read_logits(ref_path, len(tokens), n_vocab))
    finally:  # 300 positions of a 262144-token vocabulary are 315 MB per file
        ours_path.unlink(missing_ok=True)
        ref_path.unlink(missing_ok=True)

    if greedy:
        ours = labelled_ids(ours_out, "greedy")
        ref = labelled_ids(run([args.oracle, "generate", *common, "-n", greedy]), "greedy")
        matched = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), min(len(ours), len(ref)))
        case.greedy = f"{matched}/{greedy}"
        case.greedy_ok = ours == ref and len(ref) == greedy


def run_model(arch, wtype, args, n_vocab):
    """Synthesizes one model and runs its cases; an error fails the cases it touches."""
    model = args.workdir / f"{arch}-{wtype}.gguf"
    cases = [Case(arch, wtype, length) for length in args.prompt_lengths]
    print(f"{arch} {wtype}: synthesizing {model.name}", file=sys.stderr)
    try:
        run([args.channel, "model", "synth", "--arch", arch, "--type", wtype, "--vocab", args.vocab,
             "--seed", args.seed, "--out", model])
    except RuntimeError as e:
        for case in cases:
            case.error = f"synth: {e}"
        return cases
    for case in cases:
        print(f"{arch} {wtype}: prompt of {case.prompt_length} tokens", file=sys.stderr)
        try:
            run_case(case, args, model, n_vocab)
        except (RuntimeError, ValueError) as e:
            case.error = str(e)
    compared = [c for c in cases if c.same_argmax is not None]
    positions = sum(c.prompt_length for c in compared)
    agreement = sum(c.same_argmax * c.prompt_length for c in compared) / positions if positions else 0.0
    for case in cases:
        case.model_same_argmax = agreement
        case.judge()
    if all(case.passed for case in cases):  # a failing model stays for debugging
        model.unlink()
    return cases


def table(cases):
    header = ["arch", "type", "prompt len", "rel L2", "max abs", "argmax agreement", "model argmax", "greedy match",
              "result"]
    rows = []
    for c in cases:
        measured = ["-"] * 4 if c.rel_l2 is None else [f"{c.rel_l2:.3e}", f"{c.max_abs:.3e}", f"{c.same_argmax:.1%}",
                                                        f"{c.model_same_argmax:.1%}"]
        rows.append([c.arch, c.wtype, str(c.prompt_length), *measured, c.greedy,
                     "ok" if c.passed else "ERROR" if c.error else "FAIL"])
    return header, rows


def print_table(header, rows):
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def markdown(header, rows, errors):
    limits = "; ".join(f"{t}: rel L2 <= {l2:g} per prompt, argmax >= {arg:.0%} over the model's positions"
                       for t, (l2, arg) in THRESHOLDS.items())
    lines = ["# Logits parity: Channel vs llama.cpp", "",
             f"Thresholds: {limits}; greedy identical for {', '.join(sorted(GREEDY_TYPES))}.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if errors:
        lines += ["", "## Errors", ""] + [f"```\n{e}\n```" for e in errors]
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    n_vocab = gguf_array_length(args.vocab, "tokenizer.ggml.tokens")
    cases = [case for arch in args.archs for wtype in args.types for case in run_model(arch, wtype, args, n_vocab)]

    errors = list(dict.fromkeys(c.error for c in cases if c.error))  # a synth error is shared by its cases
    for error in errors:
        print(error, file=sys.stderr)
    header, rows = table(cases)
    print_table(header, rows)
    (args.workdir / "parity.md").write_text(markdown(header, rows, errors))
    failed = sum(not c.passed for c in cases)
    print(f"{len(cases) - failed}/{len(cases)} cases passed; table in {args.workdir / 'parity.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
