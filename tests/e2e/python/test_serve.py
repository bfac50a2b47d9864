"""End-to-end: the `channel` binary in --serve mode, driven through the Python client.

Run by CTest with CHANNEL_BINARY (the engine) and CHANNEL_VOCAB (a vocabulary GGUF to
synthesize a tiny Gemma 4 model with). Each test starts its own engine process.
"""

import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))

from channel_client import Client, framing  # noqa: E402
from channel_client.framing import Error, Pong, SnapshotStatus, Status, TurnComplete  # noqa: E402

BINARY = os.environ.get("CHANNEL_BINARY", "")
VOCAB = os.environ.get("CHANNEL_VOCAB", "")
TIMEOUT = 60.0
MAGIC = 0x53554C58


def setUpModule():
    global MODEL, WORKDIR, STARTDIR
    if not (BINARY and VOCAB):
        raise unittest.SkipTest("CHANNEL_BINARY and CHANNEL_VOCAB are not set")
    WORKDIR = tempfile.TemporaryDirectory()
    # Engines start in the scratch folder: snapshot paths are relative to their working directory
    # (and a random SNAPSHOT_SAVE frame must not leave files in the source tree).
    STARTDIR = os.getcwd()
    os.chdir(WORKDIR.name)
    MODEL = os.path.join(WORKDIR.name, "tiny-gemma4.gguf")
    subprocess.run([BINARY, "model", "synth", "--arch", "gemma4", "--vocab", VOCAB, "--out", MODEL,
                    "--layers", "2", "--period", "2", "--embd", "64", "--ffn", "64"], check=True,
                   stderr=subprocess.DEVNULL)


def tearDownModule():
    os.chdir(STARTDIR)
    WORKDIR.cleanup()


def header(msg_id, opcode, payload_len, magic=MAGIC, version=1):
    return struct.pack("<IHHHHI", magic, version, msg_id, opcode, 0, payload_len)


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(BINARY, MODEL, ["--threads", "2", "-n", "12"], stderr=subprocess.DEVNULL).start()
        self.client.wait_ready(timeout=TIMEOUT)
        self.client.set_config(temp=0.0, max_tokens=12)

    def tearDown(self):
        self.client.kill()

    def ping_answered(self):
        msg_id = self.client.ping()
        event = self.client.wait_for(lambda e: isinstance(e, (Pong, Error)) and e.msg_id == msg_id, timeout=TIMEOUT)
        return isinstance(event, Pong)

    def turn_text(self, text):
        return self.client.collect_turn(self.client.send_input(text), timeout=TIMEOUT).content

    def snapshot_reply(self, msg_id):
        return self.client.wait_for(lambda e: isinstance(e, (SnapshotStatus, Error)) and e.msg_id == msg_id,
                                    timeout=TIMEOUT)

    def test_turn_streams_tokens_and_completes(self):
        msg_id = self.client.send_input("Hello there")
        turn = self.client.collect_turn(msg_id, timeout=TIMEOUT)
        self.assertIn(turn.reason, (0, 1, 3))  # end of turn, max tokens or a tool call
        statuses = [e for e in turn.events if isinstance(e, Status)]
        self.assertEqual(statuses[0].status, 1)  # encoding first
        self.assertTrue(self.ping_answered())

    def test_same_greedy_turn_twice_gives_the_same_text(self):
        first = self.client.collect_turn(self.client.send_input("Say something"), timeout=TIMEOUT).content
        other = Client(BINARY, MODEL, ["--threads", "2"], stderr=subprocess.DEVNULL).start()
        try:
            other.wait_ready(timeout=TIMEOUT)
            other.set_config(temp=0.0, max_tokens=12)
            second = other.collect_turn(other.send_input("Say something"), timeout=TIMEOUT).content
        finally:
            other.kill()
        self.assertEqual(first, second)

    def test_probe_answers(self):
        result = self.client.probe("Answer now?", ["0", "1"], timeout=TIMEOUT)
        self.assertIn(result.winning_idx, (0, 1))
        self.assertGreater(result.confidence, 0.0)
        self.assertTrue(self.ping_answered())

    def test_malformed_frames_get_errors_and_the_engine_keeps_serving(self):
        rng = random.Random(1234)
        bad_frames = [
            header(7, 0x0001, 3) + b"\x00\x00\x00",                      # stream input shorter than its 8-byte preamble
            header(8, 0x0001, 12) + struct.pack("<BBHI", 1, 0, 5, 0) + struct.pack("<I", 1),  # 5 tokens announced, 1 sent
            header(9, 0x0001, 12) + struct.pack("<BBHI", 1, 0, 1, 0) + struct.pack("<I", 1 << 30),  # token id >= vocab
            header(10, 0x0077, 0),                                       # unknown opcode
        ]
        for frame in bad_frames:
            self.client._write(frame)
            event = self.client.wait_for(lambda e: isinstance(e, Error), timeout=TIMEOUT)
            self.assertTrue(event.message)
            self.assertTrue(self.ping_answered())
        for _ in range(200):  # random garbage frames, each followed by a ping that must be answered
            opcode = rng.choice([0x0001, 0x0003, 0x0004, 0x0005, 0x0007, 0x0008, 0x0009, 0x000A, 0x0012, 0x0099])
            payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
            self.client._write(header(1, opcode, len(payload)) + payload)
            self.assertTrue(self.ping_answered())

    def test_bad_magic_is_an_error_then_the_stream_resynchronises(self):
        self.client._write(b"garbage!" + header(5, 0x000E, 0, magic=0x12345678) + b"more junk")
        self.client.wait_for(lambda e: isinstance(e, Error), timeout=TIMEOUT)
        self.assertTrue(self.ping_answered())

    def test_abort_during_decode(self):
        self.client.set_config(temp=0.0, max_tokens=2000)
        msg_id = self.client.send_input("Tell me everything")
        self.client.wait_for(lambda e: getattr(e, "msg_id", None) == msg_id and type(e).__name__ in ("Content", "Thought"),
                             timeout=TIMEOUT)
        self.client.abort()
        turn = self.client.collect_turn(msg_id, timeout=TIMEOUT)
        self.assertEqual(turn.reason, 2)
        self.assertTrue(self.ping_answered())

    def test_snapshot_round_trip_continues_with_the_same_turn(self):
        self.turn_text("Hello there")
        saved = self.snapshot_reply(self.client.snapshot_save("round.snap", "entry-1"))
        self.assertIsInstance(saved, SnapshotStatus)
        self.assertEqual((saved.status, saved.stream_id), (0, "entry-1"))
        self.assertGreater(saved.clock, 0)
        again = self.snapshot_reply(self.client.snapshot_save("round.snap", "entry-2"))
        self.assertEqual((again.status, again.clock), (2, saved.clock))  # nothing new: EXISTS
        after_save = self.turn_text("What comes next?")
        self.assertTrue(after_save)

        msg_id = self.client.snapshot_load("round.snap")
        loaded = self.snapshot_reply(msg_id)
        self.assertIsInstance(loaded, SnapshotStatus)
        self.assertEqual((loaded.status, loaded.clock, loaded.stream_id), (1, saved.clock, "entry-1"))
        idle = self.client.wait_for(lambda e: isinstance(e, Status) and e.msg_id == msg_id, timeout=TIMEOUT)
        self.assertEqual(idle.status, 0)
        self.assertEqual(self.turn_text("What comes next?"), after_save)

    def test_corrupt_snapshot_is_refused_and_the_session_is_intact(self):
        self.turn_text("Hello there")
        self.assertEqual(self.snapshot_reply(self.client.snapshot_save("good.snap")).status, 0)
        with open("good.snap", "rb") as f:
            good = bytearray(f.read())
        corrupt = bytearray(good)
        corrupt[len(corrupt) // 2] ^= 0xFF
        with open("corrupt.snap", "wb") as f:
            f.write(corrupt)
        with open("short.snap", "wb") as f:
            f.write(good[: len(good) // 3])
        after_save = self.turn_text("What comes next?")
        self.assertTrue(after_save)
        self.assertEqual(self.snapshot_reply(self.client.snapshot_load("good.snap")).status, 1)

        for bad in ("corrupt.snap", "short.snap", "missing.snap"):
            reply = self.snapshot_reply(self.client.snapshot_load(bad))
            self.assertIsInstance(reply, Error, bad)
            self.assertIn("cannot load snapshot", reply.message)
            self.assertNotIn("\n", reply.message)
            self.assertTrue(self.ping_answered())
        self.assertEqual(self.turn_text("What comes next?"), after_save)

    def test_eof_exits_cleanly_within_a_second(self):
        self.client._close_stdin()
        start = time.monotonic()
        self.client._proc.wait(timeout=5)
        self.assertEqual(self.client._proc.returncode, 0)
        self.assertLess(time.monotonic() - start, 1.0)


if __name__ == "__main__":
    unittest.main()
