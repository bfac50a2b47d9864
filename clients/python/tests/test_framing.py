"""Frame codec tests. Expected bytes are written out by hand from the layout tables in
reference/original-channel.md §1.2-§1.6, not produced by the code under test."""

import struct
import unittest

from channel_client import framing
from channel_client.framing import (
    AutonomicResult,
    Config,
    Content,
    Error,
    Frame,
    FrameReader,
    MemResponse,
    Pong,
    ProtocolError,
    SnapshotStatus,
    Status,
    Thought,
    ToolCall,
    TurnComplete,
    UnknownFrame,
    decode_message,
)
from channel_client.protocol import (
    INPUT_FLAG_RAW,
    INPUT_FLAG_REASON,
    RESUME_ACTION_CLOSE_THOUGHT,
    STOP_ELASTIC_YIELD,
)


def h(text):
    """Bytes from hex written in groups; '|' separates fields for readability."""
    return bytes.fromhex(text.replace("|", " "))


def header(msg_id, opcode, length):
    """Hand-assembled header: magic 58 4C 55 53, version 01 00, then LE fields."""
    return h("58 4C 55 53 | 01 00") + bytes([msg_id, 0, opcode & 0xFF, opcode >> 8, 0, 0, length, 0, 0, 0])


class EncodeInboundTest(unittest.TestCase):
    def test_header_layout(self):
        self.assertEqual(
            framing.encode_frame(0x0001, 7, b"x"),
            h("58 4C 55 53 | 01 00 | 07 00 | 01 00 | 00 00 | 01 00 00 00 | 78"),
        )

    def test_stream_input_text_with_reason(self):
        # mode 0, flags 0x02, token_count 0, 4 unused bytes, text at offset 8
        self.assertEqual(
            framing.stream_input_frame(7, "hi", INPUT_FLAG_REASON),
            header(7, 0x0001, 10) + h("00 | 02 | 00 00 | 00 00 00 00 | 68 69"),
        )

    def test_stream_input_raw_flag(self):
        self.assertEqual(
            framing.stream_input_frame(1, "", INPUT_FLAG_RAW),
            header(1, 0x0001, 8) + h("00 | 80 | 00 00 | 00 00 00 00"),
        )

    def test_stream_input_tokens(self):
        # mode 1, token_count 2, then u32 ids 2 and 651 (0x28B)
        self.assertEqual(
            framing.stream_input_frame(2, tokens=[2, 651]),
            header(2, 0x0001, 16) + h("01 | 00 | 02 00 | 00 00 00 00 | 02 00 00 00 | 8B 02 00 00"),
        )

    def test_stream_input_rejects_text_and_tokens(self):
        with self.assertRaises(ValueError):
            framing.stream_input_frame(1, "hi", tokens=[2])

    def test_abort_has_no_payload(self):
        self.assertEqual(framing.abort_frame(3), header(3, 0x0002, 0))

    def test_mem_query_engine_layout(self):
        # top_k u16, 2 ignored bytes, query text at offset 4
        self.assertEqual(
            framing.mem_query_frame(4, "sea", top_k=5),
            header(4, 0x0003, 7) + h("05 00 | 00 00 | 73 65 61"),
        )

    def test_config_defaults_are_original_client_defaults(self):
        expected = h(
            "00 02 00 00"  # thinking_budget 512
            "| 00 00 80 3F"  # temp 1.0
            "| 33 33 73 3F"  # top_p 0.95
            "| 6F 12 83 3A"  # quiescence threshold 0.001
            "| 40 00 00 00"  # max_tokens 64
            "| CD CC 4C 3D"  # min_p 0.05
            "| CD CC 8C 3F"  # repeat_penalty 1.1
            "| 40 00 00 00"  # repeat_last_n 64
            "| CD CC CC 3D"  # frequency_penalty 0.1
            "| CD CC CC 3D"  # presence_penalty 0.1
            "| 00"  # thinking_gate
        )
        self.assertEqual(len(expected), 41)
        self.assertEqual(framing.config_frame(5, Config()), header(5, 0x0004, 41) + expected)

    def test_config_fields_in_code_order(self):
        config = Config(thinking_budget=1, temp=0.5, max_tokens=256, repeat_last_n=3, thinking_gate=True)
        payload = framing.config_frame(5, config)[16:]
        self.assertEqual(payload[0:4], h("01 00 00 00"))
        self.assertEqual(payload[4:8], h("00 00 00 3F"))
        self.assertEqual(payload[16:20], h("00 01 00 00"))
        self.assertEqual(payload[28:32], h("03 00 00 00"))
        self.assertEqual(payload[40:41], h("01"))

    def test_tool_return(self):
        # call_id 1, status 0, name_len 6, "search", result to the end
        self.assertEqual(
            framing.tool_return_frame(6, "search", '{"a":1}'),
            header(6, 0x0005, 19) + h("01 00 | 00 00 | 06 00") + b"search" + b'{"a":1}',
        )

    def test_mem_commit_ping_shutdown_are_header_only(self):
        self.assertEqual(framing.mem_commit_frame(8), header(8, 0x0006, 0))
        self.assertEqual(framing.ping_frame(9), header(9, 0x000E, 0))
        self.assertEqual(framing.shutdown_frame(10), header(10, 0x000F, 0))

    def test_set_system(self):
        self.assertEqual(framing.set_system_frame(11, "sys"), header(11, 0x0007, 3) + b"sys")

    def test_snapshot_save(self):
        # path_len 5, path, stream_id_len 3, stream id
        self.assertEqual(
            framing.snapshot_save_frame(12, "s.bin", "id1"),
            header(12, 0x0008, 12) + h("05 00") + b"s.bin" + h("03 00") + b"id1",
        )

    def test_snapshot_load_is_whole_payload_path(self):
        self.assertEqual(framing.snapshot_load_frame(13, "s.bin"), header(13, 0x0009, 5) + b"s.bin")

    def test_resume(self):
        self.assertEqual(framing.resume_frame(14), header(14, 0x000A, 0))
        self.assertEqual(framing.resume_frame(15, RESUME_ACTION_CLOSE_THOUGHT), header(15, 0x000A, 1) + h("01"))

    def test_probe_autonomic(self):
        # max_decode 1, 2 candidates, min_certainty 0.6 (0x3F19999A), prompt_len 2 "Q?",
        # then each candidate u16-prefixed
        self.assertEqual(
            framing.probe_autonomic_frame(16, "Q?", ["0", "1"]),
            header(16, 0x0012, 18) + h("01 00 | 02 00 | 9A 99 19 3F | 02 00 51 3F | 01 00 30 | 01 00 31"),
        )

    def test_utf8_lengths_are_byte_counts(self):
        frame = framing.tool_return_frame(1, "é", "")
        self.assertEqual(frame[16 + 4 : 16 + 6], h("02 00"))

    def test_u16_fields_are_range_checked(self):
        with self.assertRaises(ValueError):
            framing.tool_return_frame(1, "x" * 0x10000, "")
        with self.assertRaises(ValueError):
            framing.ping_frame(0x10000)
        with self.assertRaises(ValueError):
            framing.mem_query_frame(1, "q", top_k=-1)


# Outbound frames, hand-assembled.
CONTENT = header(9, 0x0101, 32) + h(
    "32 03 00 00"  # token_id 818
    "| 05 00 00 00 00 00 00 00"  # clock 5
    "| FF FF FF FF FF FF 00 00"  # layer mask
    "| 00 | 00 | 08 00"  # type TEXT, reserved, text_len 8
    "| E2 96 81 77 6F 72 6C 64"  # "\u2581world"
)
THOUGHT = header(9, 0x0102, 25) + h("01 00 00 00 | 06 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 00 00 01 00 | 61")
TURN_COMPLETE = header(9, 0x0103, 16) + h("10 00 00 00 | 7D 00 00 00 | 00 00 70 41 | 04 | 00 00 00")
TOOL_CALL = header(9, 0x0104, 15) + h("01 00 | 06 00") + b"search" + b"{q:1}"
STATUS = header(0, 0x0106, 20) + h("02 | 01 | 00 01 | 03 00 | 01 00 | 00 00 C8 41 | 08 00 00 00 | 40 02 00 00")
MEM_RESPONSE = header(17, 0x0105, 24) + h(
    "02 | 00 | 00 00 | 00 00 00 00 | E8 03 00 00 00 00 00 00 | 08 07 06 05 04 03 02 00"
)
SNAPSHOT_STATUS = header(18, 0x0107, 17) + h("00 | 00 | 07 00 | 2A 00 00 00 00 00 00 00 | 03 00") + b"id1"
AUTONOMIC_RESULT = header(19, 0x010C, 18) + h("01 00 | 00 00 40 3F | 00 00 00 3F | 00 00 C0 3F | 02 00") + b"ok"
PONG = header(20, 0x010E, 0)
ERROR = header(21, 0x01FF, 23) + b"Failed to load snapshot"
ALL_FRAMES = [CONTENT, THOUGHT, TURN_COMPLETE, TOOL_CALL, STATUS, MEM_RESPONSE, SNAPSHOT_STATUS, AUTONOMIC_RESULT, PONG, ERROR]


def decode(raw):
    frames = FrameReader().feed(raw)
    assert len(frames) == 1, frames
    return decode_message(frames[0])


class DecodeOutboundTest(unittest.TestCase):
    def test_content(self):
        message = decode(CONTENT)
        self.assertEqual(message, Content(9, 818, 5, 0x0000FFFFFFFFFFFF, 0, "\u2581world"))
        self.assertEqual(message.text, " world")
        self.assertEqual(message.EVENT, "content")

    def test_thought(self):
        message = decode(THOUGHT)
        self.assertIsInstance(message, Thought)
        self.assertNotIsInstance(message, Content)
        self.assertEqual((message.token_id, message.clock, message.text), (1, 6, "a"))

    def test_turn_complete(self):
        self.assertEqual(decode(TURN_COMPLETE), TurnComplete(9, 16, 125, 15.0, STOP_ELASTIC_YIELD))

    def test_tool_call(self):
        self.assertEqual(decode(TOOL_CALL), ToolCall(9, 1, "search", "{q:1}"))

    def test_status(self):
        message = decode(STATUS)
        self.assertEqual(message, Status(0, 2, True, 256, 3, 1, 25.0, 8, 576))
        self.assertTrue(message.is_saturated)

    def test_mem_response(self):
        self.assertEqual(decode(MEM_RESPONSE), MemResponse(17, 2, 0, 0, 0, (1000, 0x02030405060708)))

    def test_mem_response_count_and_status_are_separate_bytes(self):
        # The original client read a u16 count here and would see 257.
        payload = h("01 | 01 | 00 00 | 00 00 00 00 | 01 00 00 00 00 00 00 00")
        message = decode_message(Frame(1, 0x0105, payload))
        self.assertEqual((message.count, message.status, message.timestamps), (1, 1, (1,)))

    def test_snapshot_status(self):
        self.assertEqual(decode(SNAPSHOT_STATUS), SnapshotStatus(18, 0, 7, 42, "id1"))

    def test_autonomic_result_unaligned_floats(self):
        self.assertEqual(decode(AUTONOMIC_RESULT), AutonomicResult(19, 1, 0.75, 0.5, 1.5, "ok"))

    def test_pong_and_error(self):
        self.assertEqual(decode(PONG), Pong(20))
        self.assertEqual(decode(ERROR), Error(21, "Failed to load snapshot"))

    def test_unknown_opcode_is_passed_through(self):
        self.assertEqual(decode_message(Frame(3, 0x0199, b"\x01")), UnknownFrame(3, 0x0199, b"\x01"))

    def test_trailing_bytes_are_ignored(self):
        frame = FrameReader().feed(STATUS)[0]
        extended = Frame(frame.msg_id, frame.opcode, frame.payload + b"\xAA\xBB")
        self.assertEqual(decode_message(extended), decode_message(frame))

    def test_invalid_utf8_is_replaced(self):
        payload = struct.pack("<IQQBBH", 1, 0, 0, 0, 0, 1) + b"\xFF"
        self.assertEqual(decode_message(Frame(1, 0x0101, payload)).piece, "\uFFFD")


class MalformedPayloadTest(unittest.TestCase):
    def assertMalformed(self, opcode, payload):
        with self.assertRaises(ProtocolError):
            decode_message(Frame(1, opcode, payload))

    def test_short_fixed_layouts(self):
        # Each frame's fixed part cut by one byte.
        for opcode, raw, fixed in [
            (0x0101, CONTENT, 24),
            (0x0102, THOUGHT, 24),
            (0x0103, TURN_COMPLETE, 16),
            (0x0104, TOOL_CALL, 4),
            (0x0105, MEM_RESPONSE, 8),
            (0x0106, STATUS, 20),
            (0x0107, SNAPSHOT_STATUS, 14),
            (0x010C, AUTONOMIC_RESULT, 16),
        ]:
            with self.subTest(opcode=hex(opcode)):
                self.assertMalformed(opcode, raw[16 : 16 + fixed - 1])

    def test_lengths_beyond_payload(self):
        self.assertMalformed(0x0101, CONTENT[16:-1])  # text_len 8, 7 bytes of text
        self.assertMalformed(0x0104, h("01 00 | 09 00") + b"search")  # name_len 9, 6 bytes
        self.assertMalformed(0x0105, h("02 00 00 00 00 00 00 00") + bytes(8))  # count 2, one timestamp
        self.assertMalformed(0x0107, SNAPSHOT_STATUS[16:-1])
        self.assertMalformed(0x010C, AUTONOMIC_RESULT[16:-1])


class FrameReaderTest(unittest.TestCase):
    def test_merged_frames(self):
        reader = FrameReader()
        frames = reader.feed(b"".join(ALL_FRAMES))
        self.assertEqual([f.opcode for f in frames], [0x101, 0x102, 0x103, 0x104, 0x106, 0x105, 0x107, 0x10C, 0x10E, 0x1FF])
        self.assertEqual((reader.pending, reader.skipped), (0, 0))

    def test_one_byte_at_a_time_matches_whole(self):
        stream = b"".join(ALL_FRAMES)
        reader = FrameReader()
        frames = []
        for i in range(len(stream)):
            frames += reader.feed(stream[i : i + 1])
        self.assertEqual(frames, FrameReader().feed(stream))
        self.assertEqual((reader.pending, reader.skipped), (0, 0))

    def test_partial_frame_is_held_back(self):
        reader = FrameReader()
        self.assertEqual(reader.feed(CONTENT[:20]), [])
        self.assertEqual(reader.pending, 20)
        self.assertEqual(len(reader.feed(CONTENT[20:])), 1)

    def test_resync_after_leading_garbage(self):
        reader = FrameReader()
        frames = reader.feed(b"hello\n" + PONG)
        self.assertEqual(frames, [Frame(20, 0x010E, b"")])
        self.assertEqual(reader.skipped, 6)

    def test_resync_between_frames_and_on_partial_magic(self):
        # "XLU" is the start of the magic without the rest; it must not swallow the next frame.
        stream = PONG + b"XLU" + b"garbage" + ERROR
        reader = FrameReader()
        frames = []
        for i in range(len(stream)):
            frames += reader.feed(stream[i : i + 1])
        self.assertEqual([f.opcode for f in frames], [0x010E, 0x01FF])
        self.assertEqual(reader.skipped, 10)

    def test_garbage_is_dropped_at_once(self):
        reader = FrameReader()
        self.assertEqual(reader.feed(b"x" * 1000), [])
        self.assertEqual((reader.skipped, reader.pending), (1000, 0))

    def test_tail_that_may_start_a_header_is_kept(self):
        reader = FrameReader()
        self.assertEqual(reader.feed(b"abc" + PONG[:5]), [])
        self.assertEqual((reader.skipped, reader.pending), (3, 5))
        self.assertEqual(reader.feed(PONG[5:]), [Frame(20, 0x010E, b"")])

    def test_wrong_version_is_skipped(self):
        bad = h("58 4C 55 53 | 02 00 | 01 00 | 0E 01 | 00 00 | 00 00 00 00")
        reader = FrameReader()
        self.assertEqual(reader.feed(bad + PONG), [Frame(20, 0x010E, b"")])
        self.assertEqual(reader.skipped, 16)

    def test_wrong_magic_is_skipped(self):
        bad = h("58 4C 55 54 | 01 00 | 01 00 | 0E 01 | 00 00 | 00 00 00 00")
        reader = FrameReader()
        self.assertEqual(reader.feed(bad + PONG), [Frame(20, 0x010E, b"")])
        self.assertEqual(reader.skipped, 16)

    def test_oversized_length_is_treated_as_garbage(self):
        bad = h("58 4C 55 53 | 01 00 | 01 00 | 0E 01 | 00 00 | FF FF FF 7F")
        reader = FrameReader(max_payload=1024)
        self.assertEqual(reader.feed(bad + PONG), [Frame(20, 0x010E, b"")])
        self.assertEqual(reader.skipped, 16)

    def test_reserved_field_is_ignored(self):
        frame = bytearray(PONG)
        frame[10:12] = b"\xAB\xCD"
        self.assertEqual(FrameReader().feed(bytes(frame)), [Frame(20, 0x010E, b"")])


class RoundTripTest(unittest.TestCase):
    """Inbound frames through the reader: what is encoded is what an engine would read."""

    def test_every_inbound_frame_survives_the_reader(self):
        frames = [
            framing.stream_input_frame(1, "héllo"),
            framing.abort_frame(2),
            framing.mem_query_frame(3, "q"),
            framing.config_frame(4, Config()),
            framing.tool_return_frame(5, "t", "r"),
            framing.mem_commit_frame(6),
            framing.set_system_frame(7, "{}"),
            framing.snapshot_save_frame(8, "p", "s"),
            framing.snapshot_load_frame(9, "p"),
            framing.resume_frame(10),
            framing.ping_frame(11),
            framing.shutdown_frame(12),
            framing.probe_autonomic_frame(13, "p", ["a"]),
        ]
        decoded = FrameReader().feed(b"".join(frames))
        self.assertEqual([f.msg_id for f in decoded], list(range(1, 14)))
        self.assertEqual([16 + len(f.payload) for f in decoded], [len(f) for f in frames])

    def test_config_round_trip(self):
        config = Config(thinking_budget=100, temp=0.25, max_tokens=7, thinking_gate=True)
        values = struct.unpack("<IfffIffIffB", framing.config_frame(1, config)[16:])
        self.assertEqual(values[0], 100)
        self.assertEqual(values[1], 0.25)
        self.assertEqual(values[4], 7)
        self.assertEqual(values[10], 1)


if __name__ == "__main__":
    unittest.main()
