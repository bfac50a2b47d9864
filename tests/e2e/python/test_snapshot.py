"""End-to-end: OP_SNAPSHOT_SAVE / OP_SNAPSHOT_LOAD: a round trip continues exactly where the
session was saved (including a token held at an elastic yield); bad files are refused and the
session goes on unchanged. Snapshot paths are relative to the engine's scratch folder, or confined
to --snapshot-dir."""

import os
import unittest

import e2e_support as support
from channel_client import Error, SnapshotStatus
from channel_client.protocol import (
    SNAPSHOT_STATUS_EXISTS,
    SNAPSHOT_STATUS_LOADED,
    SNAPSHOT_STATUS_SAVED,
    STATUS_IDLE,
    STOP_ELASTIC_YIELD,
    STOP_TOOL_CALL,
)
from e2e_support import EXPECT, EngineTestCase


def setUpModule():
    support.set_up_module("plain", "scripted")


def tearDownModule():
    support.tear_down_module()


class SnapshotTest(EngineTestCase):
    model = "plain"
    config = {"temp": 0.0, "max_tokens": 12}
    # A snapshot holds the stream, not the episode store: with memory on, the turn after the load
    # would recall from a store that has grown since the save, and differ.
    engine_args = ("--no-memory",)

    def turn_text(self, text):
        return self.collect(self.client.send_input(text)).content

    def snapshot_reply(self, msg_id):
        return self.reply(msg_id, (SnapshotStatus,))

    def load(self, path):
        """Loads ``path``; returns its SNAPSHOT_STATUS after checking the STATUS(idle) after it."""
        msg_id = self.client.snapshot_load(path)
        loaded = self.snapshot_reply(msg_id)
        self.assertIsInstance(loaded, SnapshotStatus)
        self.assertEqual(self.wait_idle(msg_id).status, STATUS_IDLE)
        return loaded

    def test_snapshot_round_trip_continues_with_the_same_turn(self):
        self.turn_text("Hello there")
        saved = self.snapshot_reply(self.client.snapshot_save("round.snap", "entry-1"))
        self.assertIsInstance(saved, SnapshotStatus)
        self.assertEqual((saved.status, saved.stream_id), (SNAPSHOT_STATUS_SAVED, "entry-1"))
        self.assertGreater(saved.clock, 0)
        again = self.snapshot_reply(self.client.snapshot_save("round.snap", "entry-2"))
        self.assertEqual((again.status, again.clock), (SNAPSHOT_STATUS_EXISTS, saved.clock))  # nothing new
        after_save = self.turn_text("What comes next?")
        self.assertTrue(after_save)

        loaded = self.load("round.snap")
        self.assertEqual((loaded.status, loaded.clock, loaded.stream_id),
                         (SNAPSHOT_STATUS_LOADED, saved.clock, "entry-1"))
        self.assertEqual(self.turn_text("What comes next?"), after_save)

    def test_corrupt_snapshot_is_refused_and_the_session_is_intact(self):
        self.turn_text("Hello there")
        self.assertEqual(self.snapshot_reply(self.client.snapshot_save("good.snap")).status, SNAPSHOT_STATUS_SAVED)
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
        self.assertEqual(self.load("good.snap").status, SNAPSHOT_STATUS_LOADED)

        for bad in ("corrupt.snap", "short.snap", "missing.snap"):
            reply = self.snapshot_reply(self.client.snapshot_load(bad))
            self.assertIsInstance(reply, Error, bad)
            self.assertIn("cannot load snapshot", reply.message)
            self.assertNotIn("\n", reply.message)
            self.assertTrue(self.ping_answered())
        self.assertEqual(self.turn_text("What comes next?"), after_save)


class HeldTokenSnapshotTest(EngineTestCase):
    def test_snapshot_at_a_yield_keeps_the_held_token(self):
        turn = self.collect(self.client.send_input("Hello"))
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        self.assertEqual(self.reply(self.client.snapshot_save("yield.snap"), (SnapshotStatus,)).status,
                         SNAPSHOT_STATUS_SAVED)
        resumed = self.collect(self.client.send_resume())
        self.assert_turn(resumed, STOP_TOOL_CALL, content=EXPECT.continuation)

        msg_id = self.client.snapshot_load("yield.snap")
        self.assertEqual(self.reply(msg_id, (SnapshotStatus,)).status, SNAPSHOT_STATUS_LOADED)
        self.wait_idle(msg_id)
        # The held '\n\n' came back with the session: RESUME replays the same frames at the same clocks.
        self.assertEqual(support.signature(self.collect(self.client.send_resume())), support.signature(resumed))


class SnapshotDirTest(EngineTestCase):
    model = "plain"
    config = {"temp": 0.0, "max_tokens": 4}
    starts_engine = False  # started with --snapshot-dir

    def test_snapshot_dir_confines_the_paths(self):
        os.mkdir("confined")
        client = self.start_engine(extra_args=("--snapshot-dir", "confined"))
        outside = self.reply(client.snapshot_save("../outside.snap"), (SnapshotStatus,), client)
        self.assertIsInstance(outside, Error)
        self.assertIn("'..'", outside.message)
        self.assertFalse(os.path.exists("outside.snap"))
        saved = self.reply(client.snapshot_save("inside.snap"), (SnapshotStatus,), client)
        self.assertIsInstance(saved, SnapshotStatus)
        self.assertTrue(os.path.exists(os.path.join("confined", "inside.snap")))
        loaded = self.reply(client.snapshot_load("inside.snap"), (SnapshotStatus,), client)
        self.assertEqual(loaded.status, SNAPSHOT_STATUS_LOADED)


if __name__ == "__main__":
    unittest.main()
