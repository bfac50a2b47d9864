#!/usr/bin/env python3
"""Logits parity between Channel and llama.cpp over random model geometries.

Case i of seed S draws its shape from (S, i) alone: the architecture and weight type take turns,
everything else is random (2-5 layers and the global-layer period, embedding widths that are and are
not multiples of 256, 1-8 query heads with GQA ratios 1-8, head sizes 32-512 (Gemma 4: one for
sliding and one for global layers), FFN widths that are odd multiples of 32, sliding windows 4-1024,
a prompt of 1-300 tokens; Gemma 4: partial or full rotation, V = K or an own V on global layers,
layer output scales or none; Gemma 3: linear RoPE scaling or none; with --archs gemma4e too, Gemma 4
E-models of 3-6 layers: per-layer embeddings of 16-64 and 1 or more KV-shared layers where llama.cpp's
assignment allows; with --archs gemma4moe, Gemma 4 mixtures of experts: 2-32 experts, 1-8 of them per
token, expert FFN widths that are odd multiples of 32). Channel synthesizes the model,
llama.cpp (its pinned CPU variant, see cpu_variants.h) and Channel evaluate the prompt, and the
all-position logits are compared: rel L2 ||ours - ref|| / ||ref||, max |d| and argmax agreement.

Channel runs on one forced SIMD target per case, the targets taking turns, or with --every-target
on each target this CPU has; with --backend vulkan every case runs on Channel's Vulkan backend. A case fails when its rel L2 exceeds its type's threshold, or its
argmax agreement the type's minimum on a prompt of at least 50 positions (a shorter one can only
agree in coarse steps); the argmax agreement over all positions of a weight type and target must
meet the minimum too. Prints a table and the worst case per type and target, writes them to
WORKDIR/sweep.md, and exits non-zero on any failure; `--seed S --cases I` reruns case I alone.
"""
import argparse
import math
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from parity_common import (THRESHOLDS, add_common_arguments, check_common_arguments, comma_list, compare_logits,
                           labelled_line, make_prompt, markdown_table, oracle_eval, print_table, read_logits, run,
                           start_run)

QUANTIZED = {"q8_0", "q4_0"}
ARGMAX_MIN_POSITIONS = 50  # a case's own argmax agreement is judged from this many positions on


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # E-models (gemma4e) and MoE (gemma4moe) only when asked for, so that the CI's 20 shapes stay the ones reported.
    add_common_arguments(parser, "sweep.md", archs=("gemma3", "gemma4"))
    parser.add_argument("--shapes", type=int, default=20, help="number of random shapes (cases 0..N-1)")
    parser.add_argument("--cases", type=comma_list(int), help="run only these case indices (to reproduce one)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shapes, models and prompts")
    parser.add_argument("--backend", default="cpu", choices=["cpu", "vulkan"],
                        help="Channel's backend (vulkan: every case on the GPU; the SIMD target options do not apply)")
    parser.add_argument("--targets", type=comma_list(str),
                        help="Channel SIMD targets (Highway names, e.g. AVX3,AVX2,SSE4,SSSE3,SCALAR); "
                             "default: every one this CPU has")
    parser.add_argument("--threads", type=int,
                        help="threads of each engine (default: one per core); for several sweeps side by side")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--every-target", action="store_true",
                        help="run each case on every target (default: the targets take turns)")
    args = parser.parse_args()
    check_common_arguments(parser, args)
    if args.shapes < 1:
        parser.error("--shapes must be at least 1")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.backend == "vulkan" and (args.targets or args.every_target):
        parser.error("--targets and --every-target choose CPU SIMD targets: not with --backend vulkan")
    return args


@dataclass
class Shape:
    seed: int
    index: int
    arch: str
    wtype: str
    layers: int
    period: int
    embd: int
    heads: int
    kv_heads: int
    kv_heads_global: int
    head_dim: int
    head_dim_global: int
    ffn: int
    window: int
    prompt_length: int
    rotary_fraction: Optional[float] = None  # gemma4 only
    global_v: bool = False                   # gemma4 only
    layer_output_scale: bool = True          # gemma4 only
    rope_scaling: Optional[float] = None     # gemma3 only
    per_layer_embd: int = 0                  # gemma4e only
    kv_shared: int = 0                       # gemma4e only
    experts: int = 0                         # gemma4moe only
    experts_used: int = 0                    # gemma4moe only
    expert_ffn: int = 0                      # gemma4moe only

    def gemma4(self):
        return self.arch in ("gemma4", "gemma4e", "gemma4moe")

    def synth_flags(self):
        flags = ["--arch", "gemma4" if self.gemma4() else "gemma3", "--type", self.wtype,
                 "--seed", self.seed * 1_000_003 + self.index, "--layers", self.layers, "--period", self.period,
                 "--embd", self.embd, "--heads", self.heads, "--kv-heads", self.kv_heads, "--head-dim", self.head_dim,
                 "--ffn", self.ffn, "--window", self.window]
        if self.gemma4():
            flags += ["--kv-heads-global", self.kv_heads_global, "--head-dim-global", self.head_dim_global,
                      "--rotary-fraction", self.rotary_fraction]
            flags += ["--global-v"] if self.global_v else []
            flags += [] if self.layer_output_scale else ["--no-layer-output-scale"]
            if self.arch == "gemma4e":
                flags += ["--ple", self.per_layer_embd, "--kv-shared", self.kv_shared]
            if self.arch == "gemma4moe":
                flags += ["--experts", self.experts, "--experts-used", self.experts_used, "--expert-ffn", self.expert_ffn]
        else:
            flags += ["--rope-scaling", self.rope_scaling]
        return [str(flag) for flag in flags]

    def describe(self):
        text = (f"L{self.layers}/p{self.period} e{self.embd} h{self.heads}/kv{self.kv_heads} d{self.head_dim} "
                f"ffn{self.ffn} w{self.window}")
        if self.gemma4():
            text += (f" g:kv{self.kv_heads_global} d{self.head_dim_global} rot{self.rotary_fraction:g}"
                     f"{' V' if self.global_v else ' V=K'}{'' if self.layer_output_scale else ' no-scale'}")
            if self.arch == "gemma4e":
                text += f" ple{self.per_layer_embd} shared{self.kv_shared}"
            if self.arch == "gemma4moe":
                text += f" x{self.experts}/{self.experts_used} effn{self.expert_ffn}"
        else:
            text += f" ropex{self.rope_scaling:g}"
        return text


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def log_uniform_int(rng, low, high):
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def head_size(rng, heads, quantized):
    """32..512, a multiple of 16; quantized attn_output rows (heads x size) hold whole blocks of 32."""
    size = 16 * log_uniform_int(rng, 2, 32)
    return size + 16 if quantized and (heads * size) % 32 else size


def embedding_width(rng, quantized):
    """A third of the widths are multiples of 256; the others (multiples of 32 for quantized
    types, of 16 otherwise) are not. Up to 512: the tied output alone is 262144 rows of it."""
    if rng.random() < 1 / 3:
        return 256 * int(rng.integers(1, 3))
    step = 32 if quantized else 16
    width = step * log_uniform_int(rng, 64 // step, 496 // step)
    return width + step if width % 256 == 0 else width


def is_global_layer(layers, period, il):
    """As the synthesizer lays Gemma 4 layers out: every period-th layer and the last are global."""
    return il == layers - 1 or il % period == period - 1


def kv_sharing_allowed(layers, period, shared):
    """Whether llama.cpp's KV reuse fits: with the first shared layer f, shared sliding layers take
    layer f-2's KV and shared global ones layer f-1's, which must be of those types."""
    first = layers - shared
    kinds = {is_global_layer(layers, period, il) for il in range(first, layers)}
    return (first >= 2 and (True not in kinds or is_global_layer(layers, period, first - 1)) and
            (False not in kinds or not is_global_layer(layers, period, first - 2)))


def draw_shape(seed, index, archs, types):
    rng = np.random.default_rng([seed, index])
    arch = archs[index % len(archs)]
    wtype = types[(index // len(archs)) % len(types)]
    quantized = wtype in QUANTIZED
    layers = int(rng.integers(3, 7)) if arch == "gemma4e" else int(rng.integers(2, 6))
    # llama.cpp refuses a model without a sliding layer, so the period is at least 2 (layer 0
    # slides); above the layer count it makes a Gemma 3 model of sliding layers only. An E-model
    # draws it again until some number of KV-shared layers fits it.
    period = int(rng.integers(2, layers + 2))
    while arch == "gemma4e" and not any(kv_sharing_allowed(layers, period, k) for k in range(1, layers)):
        period = int(rng.integers(2, layers + 2))
    heads = int(rng.integers(1, 9))
    head_dim = head_size(rng, heads, quantized)
    # Prompts are as often long (up to 300) as short (log-uniform from 1), windows from 4 to 1024
    # fall on both sides of them.
    prompt_length = int(rng.integers(1, 301)) if rng.random() < 0.5 else log_uniform_int(rng, 1, 300)
    shape = Shape(seed=seed, index=index, arch=arch, wtype=wtype, layers=layers,
                  period=period, embd=embedding_width(rng, quantized), heads=heads,
                  kv_heads=heads // int(rng.choice(divisors(heads))), kv_heads_global=0, head_dim=head_dim,
                  head_dim_global=0, ffn=32 * (2 * int(rng.integers(0, 16)) + 1),
                  window=log_uniform_int(rng, 4, 1024), prompt_length=prompt_length)
    if shape.gemma4():
        shape.kv_heads_global = heads // int(rng.choice(divisors(heads)))
        shape.head_dim_global = head_size(rng, heads, quantized)
        shape.rotary_fraction = float(rng.choice([1.0, 0.25, round(rng.uniform(0.05, 0.95), 2)]))
        shape.global_v = bool(rng.random() < 0.5)
        shape.layer_output_scale = bool(rng.random() < 0.75)
        if arch == "gemma4e":
            # Up to 64 per layer: per_layer_token_embd is 262144 rows of layers x width.
            shape.per_layer_embd = int(rng.choice([32, 64] if quantized else [16, 32, 48, 64]))
            shape.kv_shared = int(rng.choice([k for k in range(1, layers) if kv_sharing_allowed(layers, period, k)]))
        if arch == "gemma4moe":
            # Past 16 experts the router's softmax takes ggml's vector exponential.
            shape.experts = int(rng.integers(2, 33))
            shape.experts_used = int(rng.integers(1, min(8, shape.experts) + 1))
            shape.expert_ffn = 32 * (2 * int(rng.integers(0, 8)) + 1)
    else:
        shape.rope_scaling = float(rng.choice([0.0, 8.0, round(rng.uniform(1.0, 16.0), 2)]))
    return shape


def turn_target(index, targets, args):
    """The target of case `index` when targets take turns: in the r-th round of all arch x type
    combinations, the t-th type runs on target r + t, so that over as many rounds as there are
    targets every combination meets every target."""
    round_length = len(args.archs) * len(args.types)
    return targets[(index // round_length + index // len(args.archs)) % len(targets)]


def usable_targets(channel, model):
    """The SIMD targets this build runs here, from the list that channel prints when
    CHANNEL_SIMD_TARGET names none of them (simd_target.cpp: "(usable: A, B, ...)")."""
    try:
        run([channel, "eval", "--model", model, "--tokens", "2"], env={"CHANNEL_SIMD_TARGET": "none"})
    except RuntimeError as e:
        found = re.search(r"\(usable: ([^)]*)\)", str(e))
        if found:
            return [name.strip() for name in found.group(1).split(",")]
        raise
    raise RuntimeError("channel accepted CHANNEL_SIMD_TARGET=none")


@dataclass
class Result:
    shape: Shape
    target: str
    rel_l2: Optional[float] = None
    max_abs: Optional[float] = None
    same_argmax: Optional[float] = None
    error: str = ""
    passed: bool = False

    def judge(self):
        max_rel_l2, min_same_argmax = THRESHOLDS[self.shape.wtype]
        self.passed = (not self.error and self.rel_l2 is not None and self.rel_l2 <= max_rel_l2 and
                       (self.shape.prompt_length < ARGMAX_MIN_POSITIONS or self.same_argmax >= min_same_argmax))


VULKAN_TARGET = "vulkan"  # the target column of cases run on the Vulkan backend


def channel_eval(args, model, tokens, logits_path, target):
    """channel eval on a forced SIMD target, or on the Vulkan backend; checks from its "backend:"
    line that it ran there."""
    threads = ["--threads", args.threads] if args.threads else []
    command = [args.channel, "eval", "--model", model, "--tokens", ",".join(map(str, tokens)),
               "--logits-out", logits_path, *threads]
    if target == VULKAN_TARGET:
        backend = labelled_line(run(command + ["--backend", "vulkan"]).stderr, "backend")
        if not backend.startswith("vulkan"):
            raise RuntimeError(f"channel ran on '{backend}', not on Vulkan")
        return
    backend = labelled_line(run(command, env={"CHANNEL_SIMD_TARGET": target}).stderr, "backend")
    if not backend.upper().endswith(f", {target.upper()})"):
        raise RuntimeError(f"channel ran on '{backend}', not on {target}")


def run_shape(shape, targets, args, n_vocab):
    """Synthesizes the shape's model, evaluates it on llama.cpp and on each target; a failing
    model stays in the workdir for debugging."""
    model = args.workdir / f"case-{shape.seed}-{shape.index}.gguf"
    results = [Result(shape, target) for target in targets]
    case_name = f"case-{shape.seed}-{shape.index}"
    ours_path, ref_path = args.workdir / f"{case_name}.channel.logits", args.workdir / f"{case_name}.oracle.logits"
    tokens = make_prompt(shape.prompt_length, n_vocab, (shape.seed, shape.index))
    try:
        run([args.channel, "model", "synth", "--vocab", args.vocab, "--out", model, *shape.synth_flags()])
        oracle_eval(args.oracle, model, [tokens], [ref_path], args.variants.pinned, threads=args.threads)
        ref = read_logits(ref_path, len(tokens), n_vocab)
        for result in results:
            try:
                channel_eval(args, model, tokens, ours_path, result.target)
                result.rel_l2, result.max_abs, result.same_argmax = compare_logits(
                    read_logits(ours_path, len(tokens), n_vocab), ref)
            except (RuntimeError, ValueError) as e:
                result.error = str(e)
    except (RuntimeError, ValueError) as e:
        for result in results:
            result.error = result.error or str(e)
    finally:  # 300 positions of a 262144-token vocabulary are 315 MB per file
        ours_path.unlink(missing_ok=True)
        ref_path.unlink(missing_ok=True)
    for result in results:
        result.judge()
    if all(result.passed for result in results):
        model.unlink(missing_ok=True)
    return results


@dataclass
class Group:
    """The results of one weight type on one target."""
    results: list = field(default_factory=list)

    def argmax(self):
        compared = [r for r in self.results if r.same_argmax is not None]
        positions = sum(r.shape.prompt_length for r in compared)
        return sum(r.same_argmax * r.shape.prompt_length for r in compared) / positions if positions else None

    def passed(self):
        agreement = self.argmax()
        return agreement is not None and agreement >= THRESHOLDS[self.results[0].shape.wtype][1]

    def worst(self):
        compared = [r for r in self.results if r.rel_l2 is not None]
        return max(compared, key=lambda r: r.rel_l2) if compared else None


def progress_line(result):
    """A case's outcome as it completes, so that an interrupted long run still tells its figures."""
    if result.rel_l2 is None:
        return f"ERROR {result.error.splitlines()[0] if result.error else ''}"
    return (f"rel L2 {result.rel_l2:.3e}, max abs {result.max_abs:.3e}, argmax {result.same_argmax:.1%}: "
            f"{'ok' if result.passed else 'FAIL'}")


def case_table(results):
    header = ["case", "arch", "type", "target", "shape", "prompt", "rel L2", "max abs", "argmax", "result"]
    rows = []
    for r in results:
        measured = ["-"] * 3 if r.rel_l2 is None else [f"{r.rel_l2:.3e}", f"{r.max_abs:.3e}", f"{r.same_argmax:.1%}"]
        rows.append([str(r.shape.index), r.shape.arch, r.shape.wtype, r.target, r.shape.describe(),
                     str(r.shape.prompt_length), *measured, "ok" if r.passed else "ERROR" if r.error else "FAIL"])
    return header, rows


def worst_table(groups):
    header = ["type", "target", "cases", "worst rel L2", "its case", "largest max abs", "argmax (all positions)",
              "result"]
    rows = []
    for (wtype, target), group in groups.items():
        worst, agreement = group.worst(), group.argmax()
        largest = max((r.max_abs for r in group.results if r.max_abs is not None), default=None)
        rows.append([wtype, target, str(len(group.results)),
                     "-" if worst is None else f"{worst.rel_l2:.3e}", "-" if worst is None else str(worst.shape.index),
                     "-" if largest is None else f"{largest:.3e}", "-" if agreement is None else f"{agreement:.2%}",
                     "ok" if group.passed() and all(r.passed for r in group.results) else "FAIL"])
    return header, rows


def reproduction(result):
    return (f"case {result.shape.index} ({result.shape.arch} {result.shape.wtype} on {result.target}, "
            f"{result.shape.prompt_length} tokens): rerun with --seed {result.shape.seed} --cases "
            f"{result.shape.index}; model: channel model synth --vocab VOCAB --out M.gguf "
            f"{' '.join(result.shape.synth_flags())}"
            + (f"\n  {result.error}" if result.error else ""))


def main():
    args = parse_args()
    n_vocab = start_run(args)
    indices = args.cases if args.cases is not None else list(range(args.shapes))
    shapes = [draw_shape(args.seed, i, args.archs, args.types) for i in indices]

    targets = [VULKAN_TARGET] if args.backend == "vulkan" else args.targets
    if not targets:
        probe = args.workdir / "probe.gguf"
        run([args.channel, "model", "synth", "--vocab", args.vocab, "--out", probe, "--layers", "1", "--embd", "32"])
        targets = usable_targets(args.channel, probe)
        probe.unlink()
    if args.backend == "vulkan":
        print("Channel backend: vulkan")
    else:
        print(f"Channel SIMD targets: {', '.join(targets)}" + ("" if args.every_target else " (taking turns)"))

    def run_case(shape):
        case_targets = targets if args.every_target else [turn_target(shape.index, targets, args)]
        print(f"case {shape.index}: {shape.arch} {shape.wtype} {shape.describe()}, {shape.prompt_length} tokens "
              f"on {', '.join(case_targets)}", file=sys.stderr, flush=True)
        case_results = run_shape(shape, case_targets, args, n_vocab)
        for result in case_results:
            print(f"case {shape.index} on {result.target}: {progress_line(result)}", file=sys.stderr, flush=True)
        return case_results

    started = time.monotonic()
    # Cases are independent processes of their own files: --jobs runs several at once (threads
    # suffice, each waits on its subprocesses); results keep the cases' order.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = [result for case_results in pool.map(run_case, shapes) for result in case_results]
    elapsed = time.monotonic() - started

    groups = {}
    for result in sorted(results, key=lambda r: (list(THRESHOLDS).index(r.shape.wtype), targets.index(r.target))):
        groups.setdefault((result.shape.wtype, result.target), Group()).results.append(result)
    failures = [r for r in results if not r.passed]
    weak_groups = [key for key, group in groups.items() if not group.passed()]

    case_header, case_rows = case_table(results)
    worst_header, worst_rows = worst_table(groups)
    print_table(case_header, case_rows)
    print()
    print_table(worst_header, worst_rows)
    for failure in failures:
        print("FAILED " + reproduction(failure))
    for wtype, target in weak_groups:
        print(f"FAILED argmax agreement of {wtype} on {target} over all its positions is below "
              f"{THRESHOLDS[wtype][1]:.0%}")
    summary = (f"{len(results) - len(failures)}/{len(results)} cases passed ({len(shapes)} shapes, seed {args.seed}, "
               f"{elapsed:.0f} s); reference: {args.variants.describe()}")
    print(summary)

    limits = "; ".join(f"{t}: rel L2 <= {l2:g}, argmax >= {arg:.0%}" for t, (l2, arg) in THRESHOLDS.items())
    lines = ["# Logits parity sweep: Channel vs llama.cpp on random geometries", "", summary + ".", "",
             f"Thresholds: {limits} (a case's argmax from {ARGMAX_MIN_POSITIONS} positions on; every type and "
             "target over all its positions).", "", "## Worst case per weight type and SIMD target", ""]
    lines += markdown_table(worst_header, worst_rows)
    lines += ["", "## Cases", ""] + markdown_table(case_header, case_rows)
    if failures:
        lines += ["", "## Failures", ""] + [f"```\n{reproduction(f)}\n```" for f in failures]
    (args.workdir / "sweep.md").write_text("\n".join(lines) + "\n")
    return 1 if failures or weak_groups else 0


if __name__ == "__main__":
    sys.exit(main())
