#!/usr/bin/env python3
"""Logits parity between Channel and llama.cpp.

For each architecture and weight type, Channel synthesizes a random-weight model; random prompts of
each length (starting with BOS) are then evaluated by `channel eval` and by llama_oracle (llama.cpp),
and their all-position logits compared: relative L2 error ||ours - ref|| / ||ref|| over all logits,
the largest absolute difference, and the fraction of positions whose argmax agrees. The relative
L2 threshold applies to every prompt; the argmax threshold to all positions of a model's prompts
together (372 positions for prompts of 1, 7, 64 and 300 tokens), since a prompt of 1 or 7 positions
can only agree 0%/100% or in steps of 14%; the per-prompt agreement is reported beside it. For F32
models the greedy continuations are compared too (identical, or leaving llama.cpp's only at a near
tie: parity_common.GreedyReference.judge). llama.cpp runs one CPU variant, named in the
output: by default the best this CPU runs without AMX or FP16 arithmetic (see cpu_variants.h); where
llama.cpp alone would load another, that one's distance from the pinned one is reported beside each
case (llama.cpp's own spread; not judged). Prints a table, writes it to WORKDIR/parity.md as
markdown, and exits non-zero if any case misses its threshold or fails to run.
"""
import argparse
import sys
from dataclasses import dataclass
from typing import Optional

from parity_common import (ARCH_SYNTH_FLAGS, THRESHOLDS, add_common_arguments, check_common_arguments, comma_list,
                           compare_logits, labelled_ids, make_prompt, markdown_table, oracle_eval, print_table, read_logits, run,
                           start_run)

GREEDY_TYPES = {"f32"}  # only unquantized F32 is expected to reproduce llama.cpp's greedy tokens exactly


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser, "parity.md")
    parser.add_argument("--prompt-lengths", type=comma_list(int), default=[1, 7, 64, 300])
    parser.add_argument("--greedy", type=int, default=64, help="greedy tokens compared for F32 models (0: none)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the models and prompts")
    parser.add_argument("--backend", default="cpu", help="Channel's backend for channel eval (cpu or vulkan)")
    parser.add_argument("--no-default-spread", action="store_true",
                        help="do not measure llama.cpp's default variant against the pinned one (its own spread, "
                             "reported, not judged; CTest leaves it out)")
    args = parser.parse_args()
    check_common_arguments(parser, args)
    if min(args.prompt_lengths) < 1:
        parser.error("prompt lengths must be at least 1 (the BOS)")
    return args


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
    default_spread: Optional[float] = None  # rel L2 of llama.cpp's default variant from the pinned one
    error: str = ""
    passed: bool = False

    greedy_ok: bool = True

    def judge(self):
        max_rel_l2, min_same_argmax = THRESHOLDS[self.wtype]
        self.passed = (not self.error and self.rel_l2 is not None and self.rel_l2 <= max_rel_l2 and
                       self.model_same_argmax >= min_same_argmax and self.greedy_ok)


def run_channel(args, model, tokens, logits_path, greedy):
    """channel eval of a prompt (continued greedily for `greedy` tokens); returns the greedy ids."""
    out = run([args.channel, "eval", "--model", model, "--tokens", ",".join(map(str, tokens)), "--backend", args.backend,
               "--logits-out", logits_path, *(["--greedy", greedy] if greedy else [])]).stdout
    return labelled_ids(out, "greedy") if greedy else []


def compare_case(case, n_tokens, n_vocab, ours_path, ref_path, default_path, ours_greedy, ref_greedy):
    case.rel_l2, case.max_abs, case.same_argmax = compare_logits(read_logits(ours_path, n_tokens, n_vocab),
                                                                 read_logits(ref_path, n_tokens, n_vocab))
    if default_path:
        case.default_spread = compare_logits(read_logits(default_path, n_tokens, n_vocab),
                                             read_logits(ref_path, n_tokens, n_vocab))[0]
    if ref_greedy is not None:
        matched, case.greedy_ok, note = ref_greedy.judge(ours_greedy, THRESHOLDS[case.wtype][0])
        case.greedy = f"{matched}/{len(ref_greedy.ids)}" + (f" ({note})" if note else "")


def run_cases(cases, args, model, n_vocab):
    """Channel on each prompt, then llama.cpp on all of them in one process per variant (a model
    load costs more than a short prompt), then the comparisons; an error fails the cases it touches."""
    prompts = [make_prompt(case.prompt_length, n_vocab, args.seed) for case in cases]
    paths = {name: [args.workdir / f"{name}-{i}.logits" for i in range(len(cases))]
             for name in ("channel", "oracle", "oracle-default")}
    greedy = args.greedy if cases[0].wtype in GREEDY_TYPES else 0
    try:
        ours_greedy = []
        for case, tokens, path in zip(cases, prompts, paths["channel"]):
            print(f"{case.arch} {case.wtype}: prompt of {case.prompt_length} tokens", file=sys.stderr)
            try:
                ours_greedy.append(run_channel(args, model, tokens, path, greedy))
            except (RuntimeError, ValueError) as e:
                case.error = str(e)
                ours_greedy.append(None)
        ref_greedy = oracle_eval(args.oracle, model, prompts, paths["oracle"], args.variants.pinned, greedy)
        if args.report_spread:
            oracle_eval(args.oracle, model, prompts, paths["oracle-default"], args.variants.default)
        for i, case in enumerate(cases):
            if case.error:  # channel eval failed on it
                continue
            try:
                compare_case(case, len(prompts[i]), n_vocab, paths["channel"][i], paths["oracle"][i],
                             paths["oracle-default"][i] if args.report_spread else None, ours_greedy[i],
                             ref_greedy[i] if greedy else None)
            except ValueError as e:
                case.error = str(e)
    except (RuntimeError, ValueError) as e:
        for case in cases:
            case.error = case.error or str(e)
    finally:  # 300 positions of a 262144-token vocabulary are 315 MB per file
        for path in (p for group in paths.values() for p in group):
            path.unlink(missing_ok=True)


def run_model(arch, wtype, args, n_vocab):
    """Synthesizes one model and runs its cases; an error fails the cases it touches."""
    model = args.workdir / f"{arch}-{wtype}.gguf"
    cases = [Case(arch, wtype, length) for length in args.prompt_lengths]
    print(f"{arch} {wtype}: synthesizing {model.name}", file=sys.stderr)
    try:
        run([args.channel, "model", "synth", *ARCH_SYNTH_FLAGS[arch], "--type", wtype, "--vocab", args.vocab,
             "--seed", args.seed, "--out", model])
    except RuntimeError as e:
        for case in cases:
            case.error = f"synth: {e}"
        return cases
    run_cases(cases, args, model, n_vocab)
    compared = [c for c in cases if c.same_argmax is not None]
    positions = sum(c.prompt_length for c in compared)
    agreement = sum(c.same_argmax * c.prompt_length for c in compared) / positions if positions else 0.0
    for case in cases:
        case.model_same_argmax = agreement
        case.judge()
    if all(case.passed for case in cases):  # a failing model stays for debugging
        model.unlink()
    return cases


def table(cases, variants, spread):
    header = ["arch", "type", "prompt len", "rel L2", "max abs", "argmax agreement", "model argmax", "greedy match",
              "result"]
    if spread:
        header.append(f"{variants.default} vs {variants.pinned} rel L2")
    rows = []
    for c in cases:
        measured = ["-"] * 4 if c.rel_l2 is None else [f"{c.rel_l2:.3e}", f"{c.max_abs:.3e}", f"{c.same_argmax:.1%}",
                                                        f"{c.model_same_argmax:.1%}"]
        rows.append([c.arch, c.wtype, str(c.prompt_length), *measured, c.greedy,
                     "ok" if c.passed else "ERROR" if c.error else "FAIL"])
        if spread:
            rows[-1].append("-" if c.default_spread is None else f"{c.default_spread:.3e}")
    return header, rows


def markdown(header, rows, errors, variants, spread):
    limits = "; ".join(f"{t}: rel L2 <= {l2:g} per prompt, argmax >= {arg:.0%} over the model's positions"
                       for t, (l2, arg) in THRESHOLDS.items())
    lines = ["# Logits parity: Channel vs llama.cpp", "",
             f"Reference: {variants.describe()}.", "",
             f"Thresholds: {limits}; greedy identical for {', '.join(sorted(GREEDY_TYPES))}, or leaving "
             "llama.cpp's only at a near tie (our token is its runner-up, their gap under the rel L2 bound "
             "times the row's RMS).", ""]
    if spread:
        lines += ["The last column, llama.cpp's own spread between its CPU variants, is reported, not judged.", ""]
    lines += markdown_table(header, rows)
    if errors:
        lines += ["", "## Errors", ""] + [f"```\n{e}\n```" for e in errors]
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    n_vocab = start_run(args)
    args.report_spread = args.variants.default != args.variants.pinned and not args.no_default_spread
    cases = [case for arch in args.archs for wtype in args.types for case in run_model(arch, wtype, args, n_vocab)]

    errors = list(dict.fromkeys(c.error for c in cases if c.error))  # a synth error is shared by its cases
    for error in errors:
        print(error, file=sys.stderr)
    header, rows = table(cases, args.variants, args.report_spread)
    print(f"reference: {args.variants.describe()}")
    print_table(header, rows)
    (args.workdir / "parity.md").write_text(markdown(header, rows, errors, args.variants, args.report_spread))
    failed = sum(not c.passed for c in cases)
    print(f"{len(cases) - failed}/{len(cases)} cases passed; table in {args.workdir / 'parity.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
