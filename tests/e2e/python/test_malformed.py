"""End-to-end: malformed input gets OP_ERROR (or is ignored) and never stops the engine: after
every bad frame a PING is answered."""

import random
import struct
import unittest

import e2e_support as support
from channel_client import Error, Pong, protocol
from channel_client.protocol import (
    OP_PING,
    OP_SET_CONFIG,
    OP_SHUTDOWN,
    OP_SNAPSHOT_LOAD,
    OP_SNAPSHOT_SAVE,
    OP_STREAM_INPUT,
    STOP_ELASTIC_YIELD,
)
from e2e_support import EXPECT, EngineTestCase, header


def setUpModule():
    support.set_up_module("scripted")


def tearDownModule():
    support.tear_down_module()


INBOUND = {value for name, value in vars(protocol).items() if name.startswith("OP_") and value < 0x0100}
# Every inbound opcode but SHUTDOWN, opcodes nobody defined, and outbound ones sent the wrong way.
UNKNOWN = (0x0000, 0x000B, 0x000C, 0x000D, 0x0010, 0x0011, 0x0013, 0x0077, 0x0101, 0x0106, 0x01FF, 0xFFFF)
FUZZ_OPCODES = sorted(INBOUND - {OP_SHUTDOWN}) + list(UNKNOWN)
# Frames that decode validly run for real: short bursts, a short thinking budget.
FUZZ_CONFIG = {"temp": 0.0, "max_tokens": 4, "thinking_budget": 4}
FUZZ_FRAMES = 1000


def random_frame(rng, msg_id):
    """A random frame and whether it must be answered with OP_ERROR."""
    kind = rng.random()
    if kind < 0.25:  # token mode: counts that may run past the payload, ids that may be outside the vocabulary
        count = rng.randrange(0, 7)
        sent = count if rng.random() < 0.6 else rng.randrange(0, 7)
        ids = [rng.randrange(4096) if rng.random() < 0.8 else rng.randrange(1 << 24, 1 << 32) for _ in range(sent)]
        payload = struct.pack(f"<BBH4x{sent}I", protocol.MODE_TOKENS, rng.choice((0, 0x02, 0x80)), count, *ids)
        refused = count == 0 or count > sent or any(i >= 1 << 24 for i in ids[:count])
        return header(msg_id, OP_STREAM_INPUT, len(payload)) + payload, refused
    if kind < 0.35:  # text mode with random bytes (not always UTF-8)
        text = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        payload = struct.pack("<BBH4x", protocol.MODE_TEXT, rng.choice((0, 0x01, 0x02, 0x80)), 0) + text
        return header(msg_id, OP_STREAM_INPUT, len(payload)) + payload, False
    opcode = rng.choice(FUZZ_OPCODES)
    payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
    if opcode in (OP_SNAPSHOT_SAVE, OP_SNAPSHOT_LOAD):
        payload = payload.replace(b"/", b"_")  # any file written stays in the scratch folder
    refused = opcode in UNKNOWN or (opcode == OP_STREAM_INPUT and (len(payload) < 8 or payload[0] > 1))
    return header(msg_id, opcode, len(payload)) + payload, refused


class MalformedInputTest(EngineTestCase):
    config = FUZZ_CONFIG

    def error_then_pong(self, msg_id):
        """Events up to the PONG of a new PING; the ERROR for ``msg_id`` in them, if any."""
        ping_id = self.client.ping()
        events = self.events_until(lambda e: isinstance(e, Pong) and e.msg_id == ping_id)
        errors = [e for e in events if isinstance(e, Error) and e.msg_id == msg_id]
        return errors[0] if errors else None

    def test_malformed_frames_get_errors_and_the_engine_keeps_serving(self):
        bad_frames = [
            b"\x00\x00\x00",  # stream input shorter than its 8-byte preamble
            struct.pack("<BBHI", 1, 0, 5, 0) + struct.pack("<I", 1),  # 5 tokens announced, 1 sent
            struct.pack("<BBHI", 1, 0, 1, 0) + struct.pack("<I", 1 << 30),  # token id outside the vocabulary
        ]
        frames = [header(support.RAW_MSG_ID + i, OP_STREAM_INPUT, len(p)) + p for i, p in enumerate(bad_frames)]
        frames.append(header(support.RAW_MSG_ID + 3, 0x0077, 0))  # unknown opcode
        for i, frame in enumerate(frames):
            self.client._write(frame)
            error = self.error_then_pong(support.RAW_MSG_ID + i)
            self.assertIsNotNone(error, i)
            self.assertTrue(error.message)
            self.assertNotIn("\n", error.message)

    def test_set_system_field_of_the_wrong_type_gets_an_error_naming_it(self):
        # A tool name that is not a string used to end the engine (an uncaught JSON type error).
        msg_id = self.client.send_system({"instructions": "x", "tools": [{"name": 3}]})
        error = self.error_then_pong(msg_id)
        self.assertIsNotNone(error)
        self.assertIn("tools[0].name", error.message)
        self.client.set_config(max_tokens=64)
        self.assert_turn(self.collect(self.client.send_input("Hello")), STOP_ELASTIC_YIELD,
                         content=EXPECT.first_paragraph)

    def test_tool_result_nested_too_deep_gets_an_error(self):
        # A result of nothing but brackets used to overflow the stack while it was rendered.
        msg_id = self.client.send_tool_return("lookup", "[" * 200000 + "]" * 200000)
        self.assertIsNotNone(self.error_then_pong(msg_id))

    def test_bad_magic_is_an_error_then_the_stream_resynchronises(self):
        self.client._write(b"garbage!" + header(5, OP_PING, 0, magic=0x12345678) + b"more junk")
        self.assertIsNotNone(self.error_then_pong(0))  # a refused header is answered with msg_id 0

    def test_random_frames_each_followed_by_an_answered_ping(self):
        rng = random.Random(20240611)
        for i in range(FUZZ_FRAMES):
            msg_id = support.RAW_MSG_ID + i
            frame, refused = random_frame(rng, msg_id)
            self.client._write(frame)
            error = self.error_then_pong(msg_id)  # raises if the engine hangs or exits
            if refused:
                self.assertIsNotNone(error, f"frame {i} ({frame.hex()}) was not refused")
            if frame[8:10] == struct.pack("<H", OP_SET_CONFIG):
                self.client.set_config(**FUZZ_CONFIG)  # a random configuration could make later bursts long
        # The session still works: a full answer.
        self.client.set_config(max_tokens=64)
        self.assert_turn(self.collect(self.client.send_input("Hello")), STOP_ELASTIC_YIELD,
                         content=EXPECT.first_paragraph)


if __name__ == "__main__":
    unittest.main()
