#!/usr/bin/env python3
"""Soak: a long run of `channel serve` on a scripted tiny model (``--scripted-model``, by default
tests/e2e/scripted_model.json) with turns, probes, barge-ins, elastic yields, tool calls, thoughts
and snapshots mixed, until ``--tokens`` tokens have streamed. Each cycle:

1. a user turn: the answer script up to its paragraph break (an elastic yield); every third
   cycle a new user turn barges in at the yield, otherwise RESUME runs on to the tool call and
   TOOL_RETURN to the end of the turn;
2. a discrete probe (two candidates) and, every fifth cycle, a generative probe of 8 tokens;
3. a thought turn (RAW prompt): a yield inside the thought, then RESUME CLOSE_THOUGHT, the
   answer script as content to its yield;
4. every ``--snapshot-every`` cycles, SNAPSHOT_SAVE, and the file is read back (its format:
   docs/snapshot-format.md).

Every turn's stop reason is checked against the script, and an OP_ERROR fails the soak at once.
From each snapshot: the anchors (count, contiguous RoPE positions, and their keys as first
written, byte for byte) must stay as the first snapshot has them (their position moves up behind
the ring as it wraps, by design), the live slots within the ring, the keys' RoPE positions at 0
or above and spread over fewer than 4096 + 128 (a bound that does not grow with the clock); the
engine's RSS and the tokens/s of each stretch are reported, and RSS must stay within
``--rss-growth-mb`` of the first snapshot's.

The scripted model is synthesized over ``--vocab``, or over the vocabulary the file names
("vocab", relative to the source tree): tests/reliability/scripted_tiny_vocab_model.json has
scripts of the same shape over channel-tiny's small vocabulary, whose output layer is far cheaper
than Gemma 4's.

    tests/reliability/soak.py --binary build/channel --vocab VOCAB.gguf [--tokens 1000000]
    tests/reliability/soak.py --binary build/channel \
        --scripted-model tests/reliability/scripted_tiny_vocab_model.json --csv soak.csv

Prints one line per snapshot (and writes it to ``--csv``; tests/reliability/plot_soak.py draws
that file) and exits non-zero on the first failed check.
"""

import argparse
import csv
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from channel_client import Client, EngineExited, Error, SnapshotStatus, Turn, TurnComplete  # noqa: E402
from channel_client.protocol import STOP_ELASTIC_YIELD, STOP_END_OF_TURN, STOP_TOOL_CALL  # noqa: E402

TIMEOUT = 300.0
SOURCE_TREE = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_SCRIPTED_MODEL = os.path.join(SOURCE_TREE, "tests", "e2e", "scripted_model.json")
SYSTEM = {"instructions": "You are a careful agent.",
          "tools": [{"name": "lookup", "description": "Looks something up",
                     "parameters": {"type": "object", "properties": {}, "required": []}}]}


class SoakFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise SoakFailure(message)


class Scripted:
    """A scripted-model description (tests/e2e/scripted_model.json's schema) and what the soak
    derives from it. The cycle's expected stop reasons follow from the scripts' shape (see the
    file's walkthrough), so a file of another shape is refused here rather than soaked with
    expectations it does not meet."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            description = json.load(f)
        scripts = description["scripts"]
        answer, after_tool, thought = scripts["answer"], scripts["after_tool"], scripts["thought"]
        # answer: <channel|>, the first paragraph (an elastic yield), then the tool call;
        # after_tool: a thought that ends the turn; thought: ends in '.', which the answer
        # continues with its paragraph break (the thought's yield).
        shape = (answer.startswith("<channel|>") and ".\n\n" in answer
                 and answer.index("\n\n") < answer.find("<|tool_call>") and answer.endswith("<tool_call|>")
                 and after_tool.startswith("<tool_response|><|channel>thought\n") and after_tool.endswith("<turn|>")
                 and thought.endswith(".") and " " in thought)
        check(shape, f"{path}: the scripts do not have the shape of tests/e2e/scripted_model.json")
        self.synth_args = description["synth_args"] + [arg for text in scripts.values() for arg in ("--script", text)]
        self.vocab = os.path.join(SOURCE_TREE, description["vocab"]) if "vocab" in description else None
        # A RAW turn that ends inside a thought at the thought script's first word (see
        # e2e_support.py); the files' first thought words are one token each.
        self.thought_prompt = "<|turn>user\nThink\n<turn|>\n<|turn>model\n<|channel>thought\n" + thought.split(" ")[0]


# -- the snapshot file, as docs/snapshot-format.md lays it out ---------------------------------


class Reader:
    def __init__(self, data, at=0):
        self.data, self.at = data, at

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def skip(self, n):
        self.at += n


def read_snapshot(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    check(data[:8] == b"CHNLSNAP", f"{path}: not a snapshot")
    r.skip(8)
    _version, _fingerprint, total_slots, _scratch, layers = r.take("IQIII")
    widths = [r.take("I") for _ in range(layers)]
    r.skip(8)  # clock (the ring section has it too)
    r.skip(r.take("H") + 8)  # stream id, header checksum
    sections = {}
    while r.at < len(data):
        section_id, _reserved, length, _checksum = r.take("IIQQ")
        sections[section_id] = (r.at, length)
        r.skip(length)
    ring = Reader(data, sections[2][0])
    anchors, clock, oldest_live = ring.take("Iqq")
    ring.skip(1)
    anchor_position = ring.take("q")
    kv = Reader(data, sections[3][0])
    n = kv.take("I")
    kv.skip(4 * n)  # slots
    positions = list(struct.unpack_from(f"<{n}i", data, kv.at))
    kv.skip(4 * n + 8 * n)
    anchor_keys = hashlib.sha256()
    for width in widths:
        anchor_keys.update(data[kv.at:kv.at + anchors * width * 2])  # keys of the anchors, first in view order
        kv.skip(2 * n * width * 2)  # keys and values of the layer
    return {"total_slots": total_slots, "anchors": anchors, "clock": clock, "live_ring": clock - oldest_live,
            "anchor_position": anchor_position, "slots": n, "anchor_keys": anchor_keys.hexdigest(),
            "anchor_positions_ok": positions[:anchors] == [anchor_position + a for a in range(anchors)],
            "max_position": max(positions) if positions else 0, "min_position": min(positions) if positions else 0}


def rss_mib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


# -- the workload --------------------------------------------------------------------------------


class Soak:
    def __init__(self, client, scripted):
        self.client = client
        self.scripted = scripted
        self.tokens = 0
        self.lock = threading.Lock()
        client.on("content", self._token)
        client.on("thought", self._token)
        client.on("error", lambda e: self._error(e))
        self.errors = []

    def _token(self, _event):
        with self.lock:
            self.tokens += 1

    def _error(self, event):
        self.errors.append(event)

    def turn(self, msg_id, reason):
        # A request the engine fails gets an OP_ERROR and no TURN_COMPLETE: stop waiting there,
        # not at the timeout.
        events = []

        def ends_turn(event):
            events.append(event)
            return isinstance(event, Error) or (isinstance(event, TurnComplete) and event.msg_id == msg_id)

        last = self.client.wait_for(ends_turn, TIMEOUT)
        check(not self.errors and not isinstance(last, Error), f"ERROR from the engine: {(self.errors or [last])[0]}")
        turn = Turn(msg_id, events, last)
        check(turn.reason == reason, f"turn {msg_id} stopped with reason {turn.reason}, not {reason}")
        return turn

    def user_turn_to_yield(self, text):
        turn = self.turn(self.client.send_input(text), STOP_ELASTIC_YIELD)
        check(turn.content and not turn.thought, "the user turn's yield is not in the answer")

    def cycle(self, n):
        self.user_turn_to_yield(f"Question {n}")
        if n % 3 == 0:
            self.user_turn_to_yield(f"Barge-in {n}")  # a new turn at the yield
        self.turn(self.client.send_resume(), STOP_TOOL_CALL)
        self.turn(self.client.send_tool_return("lookup", {"n": n}), STOP_END_OF_TURN)
        result = self.client.probe("Answer now?\n0: yes\n1: no\nDecision:", ["0", "1"], 1, timeout=TIMEOUT)
        check(result.winning_idx in (0, 1), "a discrete probe picked no candidate")
        if n % 5 == 0:
            self.client.probe("Say something", [], 8, timeout=TIMEOUT)
        thought_input = self.client.send_input(self.scripted.thought_prompt, reason=True, raw=True)
        thought = self.turn(thought_input, STOP_ELASTIC_YIELD)
        check(thought.thought and not thought.content, "the thought turn's yield is not in the thought")
        closed = self.turn(self.client.send_resume(close_thought=True), STOP_ELASTIC_YIELD)
        check(closed.content and not closed.thought, "after CLOSE_THOUGHT the answer is not content")

    def snapshot(self, path, n):
        msg_id = self.client.snapshot_save(path, f"cycle-{n}")
        status = self.client.wait_for(lambda e: isinstance(e, SnapshotStatus) and e.msg_id == msg_id, TIMEOUT)
        check(status.status == 0, f"SNAPSHOT_SAVE answered {status.status}")
        return status, read_snapshot(path)


CSV_COLUMNS = ["tokens", "clock", "active_slots", "anchors", "anchor_position", "live_ring", "min_position",
               "max_position", "rss_mib", "tok_s", "elapsed_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--scripted-model", default=DEFAULT_SCRIPTED_MODEL,
                        help="the scripted-model description (default: tests/e2e/scripted_model.json)")
    parser.add_argument("--vocab", help="the vocabulary GGUF to synthesize the model over (default: the one the "
                        "scripted-model file names; tests/e2e/scripted_model.json names none: give Gemma 4's, "
                        "the llama.cpp peer's)")
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--snapshot-every", type=int, default=50, help="cycles between snapshots")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rss-growth-mb", type=float, default=16.0)
    parser.add_argument("--csv", help="also write each snapshot's line to this CSV file")
    args = parser.parse_args()
    try:
        scripted = Scripted(args.scripted_model)
    except SoakFailure as failure:
        parser.error(str(failure))
    vocab = args.vocab or scripted.vocab
    if vocab is None:
        parser.error(f"{args.scripted_model} names no vocabulary: give --vocab")

    with tempfile.TemporaryDirectory(prefix="channel-soak-") as work, \
            open(args.csv or os.devnull, "w", newline="", encoding="ascii") as table_file:
        table = csv.writer(table_file)
        table.writerow(CSV_COLUMNS)
        model = os.path.join(work, "scripted.gguf")
        subprocess.run([args.binary, "model", "synth", "--vocab", vocab, "--out", model, *scripted.synth_args],
                       check=True, stdout=subprocess.DEVNULL)
        client = Client(args.binary, model, ["--threads", str(args.threads)], stderr=subprocess.DEVNULL).start()
        client.wait_ready(timeout=TIMEOUT)
        client.set_config(temp=0.0, max_tokens=64)
        soak = Soak(client, scripted)
        system_id = client.send_system(SYSTEM)
        client.ping()
        client.wait_for(lambda e: getattr(e, "msg_id", None) == system_id + 1, TIMEOUT)  # the PONG after it

        first = None
        cycle = 0
        start = time.monotonic()
        stretch_start, stretch_tokens = start, 0
        print("tokens clock active_slots anchors@position live_ring positions[min..max] rss_mib tok_s")
        try:
            while soak.tokens < args.tokens:
                cycle += 1
                soak.cycle(cycle)
                if cycle % args.snapshot_every:
                    continue
                status, snap = soak.snapshot(os.path.join(work, "soak.snap"), cycle)
                rss = rss_mib(client.pid)
                now = time.monotonic()
                rate = (soak.tokens - stretch_tokens) / (now - stretch_start)
                stretch_start, stretch_tokens = now, soak.tokens
                print(f"{soak.tokens} {snap['clock']} {status.active_slots} {snap['anchors']}@{snap['anchor_position']} {snap['live_ring']} "
                      f"[{snap['min_position']}..{snap['max_position']}] {rss:.1f} {rate:.1f}", flush=True)
                table.writerow([soak.tokens, snap["clock"], status.active_slots, snap["anchors"],
                                snap["anchor_position"], snap["live_ring"], snap["min_position"], snap["max_position"],
                                f"{rss:.1f}", f"{rate:.1f}", f"{now - start:.1f}"])
                table_file.flush()
                first = first or dict(snap, rss=rss)
                check(status.active_slots == snap["slots"] <= snap["total_slots"], "slot count out of the ring")
                # Anchors move up behind the ring as it wraps (anchor_position grows), keeping their
                # keys as first written.
                check(snap["anchors"] == first["anchors"] and snap["anchor_keys"] == first["anchor_keys"]
                      and snap["anchor_positions_ok"], "the anchors changed")
                check(snap["max_position"] - snap["min_position"] < snap["total_slots"] + 128,
                      "the keys' positions spread beyond the ring")
                check(snap["min_position"] >= 0, f"a key at position {snap['min_position']}")
                check(rss - first["rss"] <= args.rss_growth_mb, f"RSS grew by {rss - first['rss']:.1f} MiB")
        except (SoakFailure, TimeoutError, EngineExited) as failure:
            # A timeout or an exit may follow an ERROR the check did not get to see.
            unseen = soak.errors and not isinstance(failure, SoakFailure)
            errors = f" (ERROR from the engine: {soak.errors[0]})" if unseen else ""
            print(f"FAIL in cycle {cycle}, after {soak.tokens} tokens: {failure}{errors}")
            return 1
        finally:
            client.kill()
    elapsed = time.monotonic() - start
    print(f"{soak.tokens} tokens in {cycle} cycles, {elapsed:.0f} s ({soak.tokens / elapsed:.1f} tokens/s): "
          "all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
