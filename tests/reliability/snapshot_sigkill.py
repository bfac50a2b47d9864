#!/usr/bin/env python3
"""Crash safety of OP_SNAPSHOT_SAVE: SIGKILL the engine at random moments of a save, many times,
and check that the file under the target name is always a whole snapshot, either the previous
one (untouched) or the new one, never a torn mix.

Each trial starts `channel serve`, loads a base snapshot (a nearly full ring, so the file is
large and its write takes a while), feeds one short turn, puts the previous snapshot under the
target name, sends SNAPSHOT_SAVE to it and kills the engine after a random delay drawn over the
whole save (request to reply, measured first). The new snapshot is deterministic (greedy, same
state, same stream id), so "whole" is checked byte for byte against a save that was not killed.

    tests/reliability/snapshot_sigkill.py --binary build/channel [--trials 100] [--seed 1]

Needs the llama.cpp peer's Gemma 4 vocabulary (the session needs its turn tokens); prints one
line per outcome class and exits non-zero if any trial left a torn file.
"""

import argparse
import collections
import filecmp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from channel_client import Client, SnapshotStatus, Status, TurnComplete  # noqa: E402
from channel_client.protocol import STATUS_IDLE  # noqa: E402

TIMEOUT = 300.0
STREAM_ID = "sigkill"
# 8 layers of KV 1024 wide (4 heads of 256) on a 64-wide model: 16 KiB of KV per slot, so a ring
# of ~3900 tokens is a snapshot of ~64 MB, while the prefill stays cheap.
SYNTH_ARGS = ["--arch", "gemma4", "--layers", "8", "--period", "4", "--embd", "64", "--ffn", "64", "--heads", "4",
              "--kv-heads", "4", "--kv-heads-global", "4", "--head-dim", "256", "--head-dim-global", "256",
              "--window", "16"]
FILL_TOKENS = 3800


def engine(binary, model):
    client = Client(binary, model, ["--threads", "2"], stderr=subprocess.DEVNULL).start()
    client.wait_ready(timeout=TIMEOUT)
    client.set_config(temp=0.0, max_tokens=1)
    return client


def wait_idle(client, msg_id):
    client.wait_for(lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_IDLE, TIMEOUT)


def turn(client, text):
    msg_id = client.send_input(text)
    client.wait_for(lambda e: isinstance(e, TurnComplete) and e.msg_id == msg_id, TIMEOUT)
    wait_idle(client, msg_id)


def save(client, path):
    msg_id = client.snapshot_save(path, STREAM_ID)
    reply = client.wait_for(lambda e: getattr(e, "msg_id", None) == msg_id and not isinstance(e, Status), TIMEOUT)
    if not isinstance(reply, SnapshotStatus):
        sys.exit(f"save to {path} failed: {reply}")


def load(client, path):
    msg_id = client.snapshot_load(path)
    reply = client.wait_for(lambda e: getattr(e, "msg_id", None) == msg_id and not isinstance(e, Status), TIMEOUT)
    if not isinstance(reply, SnapshotStatus):
        sys.exit(f"load of {path} failed: {reply}")
    wait_idle(client, msg_id)


def engine_before_save(binary, model, base):
    """An engine whose next SNAPSHOT_SAVE writes the new snapshot: base loaded, one turn on."""
    client = engine(binary, model)
    load(client, base)
    turn(client, "b")
    return client


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the channel binary")
    parser.add_argument("--vocab", default=os.path.expanduser("~/.cache/channel-peer/src/models/ggml-vocab-gemma-4.gguf"))
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", help="where the files go (default: a fresh temporary folder, removed after)")
    args = parser.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="channel-sigkill-")
    try:
        run(args, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work):
    model, base, previous, new, target = (os.path.join(work, name) for name in
                                          ("model.gguf", "base.bin", "previous.bin", "new.bin", "target.bin"))
    temp = target + ".tmp"
    subprocess.run([args.binary, "model", "synth", *SYNTH_ARGS, "--vocab", args.vocab, "--out", model], check=True,
                   stdout=subprocess.DEVNULL)
    # The base (a nearly full ring), the previous snapshot (the base after another turn) and the
    # new one the trials write (the base after the trials' turn).
    client = engine(args.binary, model)
    turn(client, " a" * FILL_TOKENS)
    save(client, base)
    turn(client, "c")
    save(client, previous)
    client.kill()
    client = engine_before_save(args.binary, model, base)
    start = time.monotonic()
    save(client, new)
    save_seconds = time.monotonic() - start
    client.kill()
    assert not filecmp.cmp(previous, new, shallow=False)
    print(f"snapshot {os.path.getsize(new) / 1e6:.1f} MB, an unkilled save takes {save_seconds * 1000:.0f} ms")

    rng = random.Random(args.seed)
    outcomes = collections.Counter()
    for trial in range(args.trials):
        shutil.copyfile(previous, target)
        if os.path.exists(temp):
            os.remove(temp)
        client = engine_before_save(args.binary, model, base)
        client.snapshot_save(target, STREAM_ID)
        time.sleep(rng.uniform(0.0, 1.2 * save_seconds))
        client.kill()
        temp_state = ("no temporary file" if not os.path.exists(temp) else
                      "a whole temporary file" if filecmp.cmp(temp, new, shallow=False) else
                      "a partial temporary file")
        if filecmp.cmp(target, previous, shallow=False):
            outcomes[f"previous snapshot intact, {temp_state}"] += 1
        elif filecmp.cmp(target, new, shallow=False):
            outcomes[f"new snapshot whole, {temp_state}"] += 1
        else:
            outcomes["TORN: the target is neither snapshot"] += 1
            print(f"trial {trial}: the target is torn ({os.path.getsize(target)} bytes)")
    for outcome, count in sorted(outcomes.items()):
        print(f"{count:4d} / {args.trials}  {outcome}")
    if any(o.startswith("TORN") for o in outcomes):
        sys.exit(1)


if __name__ == "__main__":
    main()
