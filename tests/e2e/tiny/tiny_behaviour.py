"""channel-tiny's behaviour through the protocol, measured on questions the corpus generator
never emits in training (tools/train-tiny/corpus.py, the held-out split by key).

Each measurement starts engines through the Python client (clients/python) and returns what it
saw; test_tiny_behaviour.py holds them to the thresholds of issue 11, and running this file
prints the figures (for tools/train-tiny/README.md):

    python3 tests/e2e/tiny/tiny_behaviour.py --binary build/channel --model models/channel-tiny.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Dict, List, Sequence, Tuple

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(_ROOT, "clients", "python"))
sys.path.insert(0, os.path.join(_ROOT, "tools", "train-tiny"))

import corpus  # noqa: E402  (the generator: held-out items and the tools it declares)
from channel_client import Client, Content, Thought, Turn  # noqa: E402
from channel_client.protocol import STOP_ELASTIC_YIELD, STOP_TOOL_CALL  # noqa: E402

TIMEOUT = 60.0
# Greedy and without penalties: the model's own argmax, so the figures say what it learnt.
GREEDY = {"temp": 0.0, "max_tokens": 256, "repeat_penalty": 1.0, "frequency_penalty": 0.0,
          "presence_penalty": 0.0}
# Short factual answers from the generator's tables, one held-out question of each kind in turn.
FACT_KINDS = ("capital", "continent", "language", "colour", "sound", "opposite", "unit")
# The seed of the held-out draws; another seed draws other held-out questions.
SEED = 1


class Engine:
    """One engine process (`channel --model M --serve`), greedy, one compute thread."""

    def __init__(self, binary: str, model: str, extra_args: Sequence[str] = (), **config: Any) -> None:
        self.client = Client(binary, model, ["--threads", "1", *extra_args], stderr=subprocess.DEVNULL).start()
        self.client.wait_ready(timeout=TIMEOUT)
        self.client.set_config(**{**GREEDY, **config})

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.client.shutdown()

    def turn(self, msg_id: int) -> List[Turn]:
        """The bursts of one model turn: after each elastic yield, RESUME until the turn stops."""
        bursts = [self.client.collect_turn(msg_id, timeout=TIMEOUT)]
        while bursts[-1].reason == STOP_ELASTIC_YIELD:
            bursts.append(self.client.collect_turn(self.client.send_resume(), timeout=TIMEOUT))
        return bursts

    def ask(self, text: str, reason: bool = False) -> List[Turn]:
        return self.turn(self.client.send_input(text, reason=reason))


def frames(bursts: Sequence[Turn]) -> List[Any]:
    """The token frames (Content, Thought) of a turn's bursts, in order."""
    return [e for b in bursts for e in b.events if isinstance(e, (Content, Thought)) and e.msg_id == b.msg_id]


def content(bursts: Sequence[Turn]) -> str:
    return "".join(b.content for b in bursts)


def thought(bursts: Sequence[Turn]) -> str:
    return "".join(b.thought for b in bursts)


def held_out(kind: str, count: int, seed: int = SEED) -> List[corpus.Item]:
    """Up to `count` held-out items of `kind` with distinct keys (some kinds hold fewer)."""
    items: Dict[str, corpus.Item] = {}
    for item in corpus.corpus_items(kind, 20 * count, "test", seed):
        items.setdefault(item.key, item)
        if len(items) == count:
            break
    return list(items.values())


def fact_items(count: int, seed: int = SEED) -> List[corpus.Item]:
    """`count` distinct held-out questions, taken from the kinds in turn (a kind whose held-out
    keys run out is skipped)."""
    pools = [held_out(kind, count, seed) for kind in FACT_KINDS]
    interleaved = [pool[i] for i in range(count) for pool in pools if i < len(pool)]
    return interleaved[:count]


def answer_has(answer: str, expect: str) -> bool:
    """`expect` appears in `answer` as whole words (so 5 is not found in 15)."""
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(expect) + r"(?![A-Za-z0-9])", answer) is not None


# ---------------------------------------------------------------------------------------------
# Measurements.


def discrete_probes(binary: str, model: str, kind: str, candidates: Sequence[str], count: int,
                    seed: int = SEED) -> List[Dict[str, Any]]:
    """Discrete probes over `candidates`, between turns (the chat template), on held-out items
    of `kind` whose answer is one of them."""
    rows = []
    with Engine(binary, model) as engine:
        for item in held_out(kind, count, seed):
            result = engine.client.probe(item.user, list(candidates), timeout=TIMEOUT)
            picked = candidates[result.winning_idx]
            rows.append({"question": item.user, "expect": item.expect, "picked": picked,
                         "confidence": result.confidence, "right": picked == item.expect})
    return rows


def yes_no(binary: str, model: str, count: int, seed: int = SEED) -> List[Dict[str, Any]]:
    return discrete_probes(binary, model, "yesno", ("Yes", "No"), count, seed)


def choice(binary: str, model: str, count: int, seed: int = SEED) -> List[Dict[str, Any]]:
    """A/B/C questions: the options are in the prompt, the answer is a letter."""
    return discrete_probes(binary, model, "choice", ("A", "B", "C"), count, seed)


def facts(binary: str, model: str, count: int, seed: int = SEED, kinds: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """Plain turns, each in a fresh engine (a conversation of its own, as in the corpus): the
    table facts in turn, or `count` items of each of `kinds`."""
    rows = []
    for item in [it for k in kinds for it in held_out(k, count, seed)] if kinds else fact_items(count, seed):
        with Engine(binary, model) as engine:
            bursts = engine.ask(item.user)
        answer = content(bursts)
        rows.append({"question": item.user, "expect": item.expect, "answer": answer,
                     "thought_frames": sum(isinstance(f, Thought) for f in frames(bursts)),
                     "right": answer_has(answer, item.expect)})
    return rows


def reasoning(binary: str, model: str, kinds: Sequence[str], count: int, seed: int = SEED) -> List[Dict[str, Any]]:
    """Turns with INPUT_FLAG_REASON: frame kinds in order, and whether the answer is right."""
    rows = []
    for kind in kinds:
        for item in held_out(kind, count, seed):
            with Engine(binary, model) as engine:
                bursts = engine.ask(item.user, reason=True)
            kinds_seen = [type(f).__name__ for f in frames(bursts)]
            rows.append({"question": item.user, "expect": item.expect, "thought": thought(bursts),
                         "answer": content(bursts), "frames": kinds_seen, "reason": bursts[-1].reason,
                         "right": answer_has(content(bursts), item.expect)})
    return rows


def gemma_arguments(raw: str) -> Dict[str, Any]:
    """Gemma 4's call notation ({key:value,...}, strings between <|"|>, spaces as U+2581) as a
    dict; raises ValueError when it does not parse."""
    text = raw.replace("\u2581", " ")
    strings: List[str] = []

    def keep(match: "re.Match[str]") -> str:
        strings.append(match.group(1))
        return f'"\\u0000{len(strings) - 1}"'

    text = re.sub(r'<\|"\|>(.*?)<\|"\|>', keep, text, flags=re.S)
    text = re.sub(r"([{,])\s*([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', text)
    value = json.loads(text)

    def restore(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: restore(x) for k, x in v.items()}
        if isinstance(v, list):
            return [restore(x) for x in v]
        if isinstance(v, str) and v.startswith("\u0000"):
            return strings[int(v[1:])]
        return v

    if not isinstance(value, dict):
        raise ValueError(f"arguments are not an object: {raw!r}")
    return restore(value)


def tools(binary: str, model: str, count: int, json_calls: bool, seed: int = SEED) -> List[Dict[str, Any]]:
    """Tool turns: the system turn declares the corpus's tools; the call's arguments are parsed
    (Gemma notation, or JSON with --tool-call-json); the tool's result goes back by TOOL_RETURN
    and the answer must hold the returned value."""
    rows = []
    names = sorted(corpus.TOOLS)
    for i in range(count):
        name = names[i % len(names)]
        items = [it for it in held_out(name, count, seed + i) if it.expect is not None]  # not the failed-tool kind
        item = items[0]
        _, want_args, result, _, _ = item.tool
        row: Dict[str, Any] = {"question": item.user, "tool": name, "want_args": want_args, "expect": item.expect}
        with Engine(binary, model, ["--tool-call-json"] if json_calls else []) as engine:
            engine.client.send_system({"instructions": "You can use tools. Answer briefly.",
                                       "tools": [corpus.TOOLS[t] for t in names]})
            call_turn = engine.ask(item.user)
            calls = [c for b in call_turn for c in b.tool_calls]
            row["stop"] = call_turn[-1].reason
            row["calls"] = [(c.tool_name, c.args_json) for c in calls]
            try:
                row["args"] = (json.loads(calls[0].args_json) if json_calls else gemma_arguments(calls[0].args_json))
            except (IndexError, ValueError) as error:
                row["args"] = None
                row["parse_error"] = str(error)
            if calls:
                after = engine.turn(engine.client.send_tool_return(calls[0].tool_name, result))
                row["after_thought"], row["answer"] = thought(after), content(after)
                row["after_stop"] = after[-1].reason
        row["call_right"] = bool(calls) and calls[0].tool_name == name and row["args"] == want_args
        row["answer_right"] = answer_has(row.get("answer", ""), item.expect)
        rows.append(row)
    return rows


SENTENCE_END = re.compile(r"[.!?]\n+$")


def elastic(binary: str, model: str, count: int, seed: int = SEED) -> List[Dict[str, Any]]:
    """Every burst that ends in an elastic yield: the text up to and including its held token."""
    rows = []
    items = [it for kind in ("about_country", "about_animal", "mul", "add") for it in held_out(kind, count, seed)]
    for item in items:
        with Engine(binary, model) as engine:
            bursts = engine.ask(item.user, reason=item.key.split("|")[0] in ("mul", "add"))
        for burst in bursts:
            if burst.reason == STOP_ELASTIC_YIELD:
                text = "".join(f.text for f in frames([burst]))
                rows.append({"question": item.user, "burst": text, "sentence_end": bool(SENTENCE_END.search(text))})
    return rows


def determinism(binary: str, model: str, prompts: Sequence[Tuple[str, bool]]) -> List[Dict[str, Any]]:
    """The same greedy turns in two fresh engines: token ids, clocks, kinds and stop reasons."""
    runs = []
    for _ in range(2):
        with Engine(binary, model) as engine:
            runs.append([[(type(f).__name__, f.token_id, f.clock) for f in frames(engine.ask(p, reason=r))]
                         for p, r in prompts])
    return [{"prompt": p, "same": a == b, "tokens": len(a)} for (p, _), a, b in zip(prompts, runs[0], runs[1])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args()
    report: Dict[str, Any] = {}

    def timed(name: str, fn, *a: Any) -> List[Dict[str, Any]]:
        start = time.monotonic()
        rows = fn(args.binary, args.model, *a)
        report[name] = rows
        print(f"{name}: {len(rows)} rows in {time.monotonic() - start:.1f} s", flush=True)
        return rows

    rows = timed("yes_no", yes_no, args.count, args.seed)
    good = sum(r["right"] and r["confidence"] >= 0.8 for r in rows)
    print(f"  right with confidence >= 0.8: {good}/{len(rows)}; right: {sum(r['right'] for r in rows)}; "
          f"min confidence when right: {min([r['confidence'] for r in rows if r['right']] or [0]):.3f}")
    for r in rows:
        if not (r["right"] and r["confidence"] >= 0.8):
            print("   miss:", r)
    rows = timed("choice", choice, args.count, args.seed)
    print(f"  right with confidence >= 0.8: {sum(r['right'] and r['confidence'] >= 0.8 for r in rows)}/{len(rows)}; "
          f"right: {sum(r['right'] for r in rows)}")
    rows = timed("facts", facts, args.count, args.seed)
    print(f"  right: {sum(r['right'] for r in rows)}/{len(rows)}; with thought frames: "
          f"{sum(r['thought_frames'] > 0 for r in rows)}")
    for r in rows:
        if not r["right"]:
            print("   miss:", r)
    rows = timed("arithmetic_plain", facts, 5, args.seed, ("add", "sub", "mul"))
    print(f"  right: {sum(r['right'] for r in rows)}/{len(rows)}")
    for r in rows:
        if not r["right"]:
            print("   miss:", r)
    rows = timed("reasoning", reasoning, ("add", "sub", "mul", "letters"), 5, args.seed)
    ordered = sum(bool(r["frames"]) and r["frames"][0] == "Thought" and "Content" in r["frames"] and
                  r["frames"] == sorted(r["frames"], key=lambda k: k != "Thought") for r in rows)
    print(f"  thought frames then content: {ordered}/{len(rows)}; answer right: {sum(r['right'] for r in rows)}")
    for r in rows:
        if not r["right"]:
            print("   miss:", {k: r[k] for k in ("question", "expect", "thought", "answer")})
    for json_calls in (False, True):
        rows = timed(f"tools_json={json_calls}", tools, 12, json_calls, args.seed)
        print(f"  stopped at the call: {sum(r['stop'] == STOP_TOOL_CALL for r in rows)}/{len(rows)}; "
              f"arguments parse: {sum(r['args'] is not None for r in rows)}/{len(rows)}; "
              f"call right: {sum(r['call_right'] for r in rows)}/{len(rows)}; "
              f"answer uses result: {sum(r['answer_right'] for r in rows)}/{len(rows)}")
        for r in rows:
            if not (r["call_right"] and r["answer_right"]):
                print("   miss:", r)
    rows = timed("elastic", elastic, 5, args.seed)
    print(f"  yields: {len(rows)}, at sentence ends: {sum(r['sentence_end'] for r in rows)}")
    for r in rows:
        if not r["sentence_end"]:
            print("   miss:", r)
    rows = timed("determinism", determinism, [("What is 47 + 38?", True), ("Tell me about Peru.", False),
                                              ("Hello!", False)])
    print(f"  same: {sum(r['same'] for r in rows)}/{len(rows)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
