"""What the logits parity scripts share: running Channel and llama_oracle on the same token ids,
reading and comparing their logits, the thresholds, and the choice of llama.cpp's CPU variant."""
import argparse
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

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

# The architectures the drivers compare: name -> `channel model synth` flags. gemma4e is a Gemma 4
# E-model: with the synthesizer's 6 layers of period 3 (sliding 0, 1, 3, 4; global 2, 5),
# per-layer embeddings of width 32 and the last 3 layers KV-shared (3 and 4 reuse layer 1's KV,
# 5 reuses layer 2's, as llama.cpp assigns them), those with a double-wide FFN. gemma4moe is a
# Gemma 4 mixture-of-experts model of the same 6 layers (26B-A4B's layout): every layer routes each
# token to 3 of 8 experts of 128 hidden units beside its dense FFN of 256.
ARCH_SYNTH_FLAGS = {
    "gemma3": ["--arch", "gemma3"],
    "gemma4": ["--arch", "gemma4"],
    "gemma4e": ["--arch", "gemma4", "--ple", "32", "--kv-shared", "3"],
    "gemma4moe": ["--arch", "gemma4", "--experts", "8", "--experts-used", "3", "--expert-ffn", "128"],
}

# What the drivers run without --archs; gemma4moe is asked for by name (CTest logits_parity_moe).
DEFAULT_ARCHS = ("gemma3", "gemma4", "gemma4e")


def comma_list(convert):
    return lambda text: [convert(item) for item in text.split(",") if item]


def existing_file(text):
    """An absolute path (a bare relative name would be looked up on PATH when run) to a file."""
    path = Path(text).resolve()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no file {text}")
    return path


def add_common_arguments(parser, report_name, archs=DEFAULT_ARCHS):
    """The options both drivers take: the binaries, the vocabulary, the work folder, the weight types
    and architectures (`archs` by default), and the llama.cpp CPU variant."""
    parser.add_argument("--channel", required=True, type=existing_file, help="the channel binary")
    parser.add_argument("--oracle", required=True, type=existing_file, help="the llama_oracle binary")
    parser.add_argument("--vocab", required=True, type=existing_file, help="Gemma 4 vocabulary GGUF")
    parser.add_argument("--workdir", required=True, type=Path, help=f"models, logits and {report_name} go here")
    parser.add_argument("--types", type=comma_list(str), default=list(THRESHOLDS), help="weight types")
    parser.add_argument("--archs", type=comma_list(str), default=list(archs),
                        help=f"architectures: {', '.join(ARCH_SYNTH_FLAGS)} (gemma4e: a Gemma 4 E-model, gemma4moe: "
                             f"a Gemma 4 mixture of experts; default {','.join(archs)})")
    parser.add_argument("--cpu-variant", default="reference",
                        help="llama.cpp CPU variant to compare against (default: reference, the best without AMX "
                             "or FP16 arithmetic)")


def start_run(args):
    """Makes the work folder, picks the llama.cpp variant (args.variants) and names it; returns the
    vocabulary size."""
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.variants = cpu_variants(args.oracle, args.cpu_variant)
    print(f"reference: {args.variants.describe()}")
    return gguf_array_length(args.vocab, "tokenizer.ggml.tokens")


def check_common_arguments(parser, args):
    unknown = set(args.types) - set(THRESHOLDS)
    if unknown:
        parser.error(f"no thresholds for weight types {sorted(unknown)}")
    unknown = set(args.archs) - set(ARCH_SYNTH_FLAGS)
    if unknown:
        parser.error(f"unknown architectures {sorted(unknown)} (known: {', '.join(ARCH_SYNTH_FLAGS)})")


def run(command, env=None):
    """Runs a command (with `env` added to the environment) and returns its CompletedProcess; on
    failure raises with its stderr (or stdout)."""
    command = [str(part) for part in command]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env} if env else None)
    if result.returncode != 0:
        output = (result.stderr.strip() or result.stdout.strip())[-2000:]
        prefix = "".join(f"{k}={v} " for k, v in (env or {}).items())
        raise RuntimeError(f"exit {result.returncode}: {prefix}{' '.join(command)}" + (f"\n{output}" if output else ""))
    return result


def labelled_line(text, label):
    """The rest of the first line "LABEL: ..." of a program's output."""
    for line in text.splitlines():
        if line.startswith(label + ":"):
            return line[len(label) + 1:].strip()
    raise ValueError(f"no '{label}:' line in the output:\n{text[-2000:]}")


def labelled_ids(text, label):
    """The token ids on the line "LABEL: id id ..." that channel eval and llama_oracle print."""
    return [int(word) for word in labelled_line(text, label).split()]


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
    """BOS then uniformly random ids: every id is a valid input for a random-weight model. `seed`
    is an int or a tuple of ints."""
    rng = np.random.default_rng([*(seed if isinstance(seed, tuple) else (seed,)), length])
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
class CpuVariants:
    """llama.cpp's CPU variants on this machine (llama_oracle variants): the one the parity
    tests pin, and the one llama.cpp would load by itself."""
    pinned: str
    default: str

    def describe(self):
        if self.pinned == self.default:
            return f"llama.cpp CPU variant {self.pinned} (also llama.cpp's own choice here)"
        return f"llama.cpp CPU variant {self.pinned} (llama.cpp alone would load {self.default})"


def cpu_variants(oracle, requested):
    """`requested`: a variant name, or "reference" (the best without AMX/FP16 arithmetic)."""
    out = run([oracle, "variants"]).stdout
    names = [line.split()[1] for line in out.splitlines() if line.startswith("variant:")]
    pinned = labelled_line(out, "reference") if requested == "reference" else requested
    if pinned not in names:
        raise RuntimeError(f"llama.cpp CPU variant '{pinned}' does not run here (variants: {', '.join(names)})")
    return CpuVariants(pinned, labelled_line(out, "default"))


@dataclass
class GreedyReference:
    """llama.cpp's greedy continuation of a prompt: each step's id, its runner-up and the gap between
    their logits over the row's root mean square (llama_oracle's greedy_margin)."""
    ids: list
    runners_up: list
    margins: list

    def judge(self, ours, max_rel_l2):
        """(matched, passed, note) for our continuation. Two engines whose logits differ by a
        relative L2 error e may order two candidates differently where their logits are closer than
        about e times the row's root mean square, and after one different token the continuations
        no longer share a context. So a continuation passes when it equals llama.cpp's, or when it
        leaves it only at a near tie: a step whose margin is under the type's rel L2 bound, where
        our token is llama.cpp's runner-up; nothing after that step is compared."""
        matched = next((i for i, (a, b) in enumerate(zip(ours, self.ids)) if a != b), min(len(ours), len(self.ids)))
        if ours == self.ids:
            return matched, True, ""
        if matched == len(ours) or matched == len(self.ids):
            return matched, False, ""
        near_tie = ours[matched] == self.runners_up[matched] and self.margins[matched] < max_rel_l2
        return matched, near_tie, f"tie at {matched}: margin {self.margins[matched]:.1e}" if near_tie else ""


def oracle_eval(oracle, model, prompts, logits_paths, variant, greedy=0, threads=None):
    """Runs llama_oracle eval on the variant, one process for all `prompts` (each writes its
    logits to the matching path; one model load instead of one per prompt); checks that it loaded
    that variant. With greedy > 0 returns each prompt's greedy continuation (a GreedyReference), else [].
    `threads`: llama.cpp's thread count (default: one per core)."""
    command = [oracle, "eval", "--model", model, "--cpu-variant", variant] + (["--threads", threads] if threads else [])
    for tokens, path in zip(prompts, logits_paths, strict=True):
        command += ["--tokens", ",".join(map(str, tokens)), "--logits-out", path]
    out = run(command + (["--greedy", greedy] if greedy else [])).stdout
    loaded = labelled_line(out, "cpu_variant")
    if loaded != variant:
        raise RuntimeError(f"llama_oracle loaded CPU variant {loaded}, not {variant}")
    if not greedy:
        return []
    lines = {label: [line.split(":", 1)[1].split() for line in out.splitlines() if line.startswith(label + ":")]
             for label in ("greedy", "greedy_runner_up", "greedy_margin")}
    for label, found in lines.items():
        if len(found) != len(prompts):
            raise ValueError(f"llama_oracle printed {len(found)} {label} lines for {len(prompts)} prompts")
    return [GreedyReference([int(w) for w in ids], [int(w) for w in runners_up], [float(w) for w in margins])
            for ids, runners_up, margins in zip(lines["greedy"], lines["greedy_runner_up"], lines["greedy_margin"])]


def print_table(header, rows):
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def markdown_table(header, rows):
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
