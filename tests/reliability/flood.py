#!/usr/bin/env python3
"""Inbound flood: a client writing frames faster than `channel serve` serves them does not grow
the engine's memory without bound, and an ABORT behind the flood still stops the running turn.

Two phases on a synthesized tiny model (random weights: it decodes until stopped):

1. PINGs while idle: ``--pings`` PING frames written back to back. The main loop answers them
   as fast as it can; the reader waits for room when the queue is full (back-pressure), so
   every PING is answered with PONG (none refused, unless the main loop stalls for 20 ms).
2. INPUT while decoding: a turn runs (max_tokens 10^6); ``--input-mb`` MiB of STREAM_INPUT
   frames of ``--frame-kb`` KiB of text each are written while it decodes, then an ABORT.
   The queue fills to its bound (64 MiB), the frames beyond it are refused with OP_ERROR,
   and the ABORT ends the turn (TURN_COMPLETE, reason ABORTED).

Reports the engine's peak RSS (VmHWM) above its RSS after start in each phase, the PING rate,
and the ABORT latency (from writing ABORT to reading the turn's TURN_COMPLETE); exits non-zero
when a growth exceeds ``--rss-growth-mb``, a frame went unanswered, or the ABORT took longer
than ``--abort-ms``.

    tests/reliability/flood.py --binary build/channel --vocab VOCAB.gguf [--pings 1000000]
                               [--input-mb 1024] [--frame-kb 1024]

CTest runs a short version (e2e label; see tests/e2e/CMakeLists.txt).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from channel_client import Client  # noqa: E402
from channel_client import framing  # noqa: E402
from channel_client.protocol import STOP_ABORTED  # noqa: E402

TIMEOUT = 600.0
SYNTH_ARGS = ["--arch", "gemma4", "--layers", "2", "--period", "2", "--embd", "64", "--ffn", "64"]
# Frames per write: large writes keep the client faster than the engine.
BATCH = 4096


def rss_kib(pid, field):
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


class Replies:
    """Counts what the engine answers, from the client's reader thread."""

    def __init__(self, client):
        self.lock = threading.Condition()
        self.pongs = 0
        self.errors = 0
        self.first_token = {}  # msg_id -> time of its first content/thought frame
        self.completed = {}  # msg_id -> (time, reason)
        client.on("pong", lambda e: self._count("pongs"))
        client.on("error", lambda e: self._count("errors"))
        client.on("content", self._token)
        client.on("thought", self._token)
        client.on("turn_complete", self._complete)

    def _count(self, name):
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)
            self.lock.notify_all()

    def _token(self, event):
        with self.lock:
            self.first_token.setdefault(event.msg_id, time.monotonic())
            self.lock.notify_all()

    def _complete(self, event):
        with self.lock:
            self.completed[event.msg_id] = (time.monotonic(), event.reason)
            self.lock.notify_all()

    def wait(self, predicate, what):
        with self.lock:
            if not self.lock.wait_for(lambda: predicate(self), TIMEOUT):
                raise RuntimeError(f"timed out waiting for {what}")


def write_batched(client, frames):
    """Writes the frames from the iterable `frames`, BATCH at a time."""
    batch = []
    for frame in frames:
        batch.append(frame)
        if len(batch) == BATCH:
            client._write(b"".join(batch))
            batch.clear()
    if batch:
        client._write(b"".join(batch))


def raw_id(i):
    # Far from the ids the client allocates for its own requests (1, 2, ...).
    return 0x1000 + i % 0xE000


def ping_phase(client, replies, count):
    start = time.monotonic()
    write_batched(client, (framing.ping_frame(raw_id(i)) for i in range(count)))
    replies.wait(lambda r: r.pongs + r.errors >= count, f"{count} PING replies")
    return time.monotonic() - start, replies.pongs, replies.errors


def input_phase(client, replies, input_mb, frame_kb):
    client.set_config(temp=0.0, max_tokens=1_000_000)
    turn_id = client.send_input("Tell me everything")
    replies.wait(lambda r: turn_id in r.first_token, "the turn's first token")
    errors_before = replies.errors
    text = "x" * (frame_kb * 1024 - 8)  # the payload's 8-byte INPUT header, then the text
    frames = input_mb * 1024 // frame_kb
    start = time.monotonic()
    write_batched(client, (framing.stream_input_frame(raw_id(i), text) for i in range(frames)))
    flood_s = time.monotonic() - start
    still_decoding = turn_id not in replies.completed
    abort_sent = time.monotonic()
    client.abort()
    replies.wait(lambda r: turn_id in r.completed, "the aborted turn's TURN_COMPLETE")
    done, reason = replies.completed[turn_id]
    return {"frames": frames, "flood_s": flood_s, "still_decoding": still_decoding, "reason": reason,
            "abort_ms": (done - abort_sent) * 1000.0, "refused": replies.errors - errors_before}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--vocab", required=True, help="a Gemma 4 vocabulary GGUF (the llama.cpp peer's)")
    parser.add_argument("--pings", type=int, default=1_000_000)
    parser.add_argument("--input-mb", type=int, default=1024)
    parser.add_argument("--frame-kb", type=int, default=1024)
    parser.add_argument("--rss-growth-mb", type=float, default=128.0,
                        help="most the peak RSS may grow over the RSS after start (queue bound 64 MiB)")
    parser.add_argument("--abort-ms", type=float, default=1000.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="channel-flood-") as work:
        model = os.path.join(work, "plain.gguf")
        subprocess.run([args.binary, "model", "synth", "--vocab", args.vocab, "--out", model, *SYNTH_ARGS],
                       check=True, stdout=subprocess.DEVNULL)
        client = Client(args.binary, model, ["--threads", "1"], stderr=subprocess.DEVNULL, queue_events=False)
        ready = threading.Event()
        client.on("status", lambda e: ready.set())
        replies = Replies(client)
        client.start()
        if not ready.wait(TIMEOUT):
            raise RuntimeError("the engine did not get ready")
        pid = client.pid
        base_kib = rss_kib(pid, "VmRSS")

        ping_s, pongs, refused_pings = ping_phase(client, replies, args.pings)
        ping_hwm_kib = rss_kib(pid, "VmHWM")
        flood = input_phase(client, replies, args.input_mb, args.frame_kb)
        input_hwm_kib = rss_kib(pid, "VmHWM")
        client._close_stdin()  # EOF: what still waits is dropped
        client.kill()

    growth = [(hwm - base_kib) / 1024.0 for hwm in (ping_hwm_kib, input_hwm_kib)]
    print(f"RSS after start: {base_kib / 1024.0:.1f} MiB")
    print(f"PINGs while idle: {args.pings} in {ping_s:.2f} s ({args.pings / ping_s:,.0f}/s), "
          f"{pongs} PONG, {refused_pings} refused; peak RSS +{growth[0]:.1f} MiB")
    print(f"INPUT while decoding: {flood['frames']} frames of {args.frame_kb} KiB ({args.input_mb} MiB) "
          f"in {flood['flood_s']:.2f} s, {flood['refused']} refused; peak RSS +{growth[1]:.1f} MiB; "
          f"ABORT answered in {flood['abort_ms']:.1f} ms (reason {flood['reason']})")
    failures = []
    if pongs + refused_pings != args.pings:
        failures.append("a PING went unanswered")
    if max(growth) > args.rss_growth_mb:
        failures.append(f"peak RSS grew by {max(growth):.1f} MiB, over {args.rss_growth_mb} MiB")
    if not flood["still_decoding"] or flood["reason"] != STOP_ABORTED:
        failures.append("the turn was not running when the flood ended, or did not end ABORTED")
    if flood["abort_ms"] > args.abort_ms:
        failures.append(f"the ABORT took {flood['abort_ms']:.0f} ms, over {args.abort_ms} ms")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
