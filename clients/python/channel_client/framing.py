"""Pure frame codec for the Channel protocol: no I/O, no threads.

* ``*_frame(msg_id, ...)`` build complete inbound frames (header + payload) as bytes.
* ``FrameReader`` splits an outbound byte stream into ``Frame`` tuples, whatever the read
  boundaries, and skips bytes that are not frames.
* ``decode_message(frame)`` turns a ``Frame`` into a typed message (``Content``, ``Status``...).

All integers and floats are little-endian. Layouts are the original engine's code
(reference/original-channel.md §1.5-§1.6), not its prose docs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, List, NamedTuple, Optional, Sequence, Tuple

from .protocol import (
    HEADER_SIZE,
    INPUT_FLAG_NONE,
    MAGIC,
    MAX_PAYLOAD,
    MODE_TEXT,
    MODE_TOKENS,
    OP_ABORT,
    OP_AUTONOMIC_RESULT,
    OP_ERROR,
    OP_MEM_COMMIT,
    OP_MEM_QUERY,
    OP_MEM_RESPONSE,
    OP_PING,
    OP_PONG,
    OP_PROBE_AUTONOMIC,
    OP_RESUME,
    OP_SET_CONFIG,
    OP_SET_SYSTEM,
    OP_SHUTDOWN,
    OP_SNAPSHOT_LOAD,
    OP_SNAPSHOT_SAVE,
    OP_SNAPSHOT_STATUS,
    OP_STATUS,
    OP_STREAM_CONTENT,
    OP_STREAM_INPUT,
    OP_STREAM_THOUGHT,
    OP_TOOL_CALL,
    OP_TOOL_RETURN,
    OP_TURN_COMPLETE,
    RESUME_ACTION_CONTINUE,
    STATUS_FLAG_SATURATED,
    VERSION,
)

_HEADER = struct.Struct("<IHHHHI")  # magic, version, msg_id, opcode, reserved, payload_len
# Every valid header starts with magic + version; the reader resynchronises on this pattern.
_SYNC = struct.pack("<IH", MAGIC, VERSION)

_U16_MAX = 0xFFFF


class ProtocolError(ValueError):
    """An outbound frame whose payload does not match its opcode's layout."""


class Frame(NamedTuple):
    msg_id: int
    opcode: int
    payload: bytes


# ---------------------------------------------------------------------------------------------
# Encoding (host -> engine)


def _check_u16(value: int, what: str) -> int:
    if not 0 <= value <= _U16_MAX:
        raise ValueError(f"{what} must fit in a u16, got {value}")
    return value


def _prefixed(text: str, what: str) -> bytes:
    """u16 length + UTF-8 bytes, the string encoding used inside payloads."""
    data = text.encode("utf-8")
    return struct.pack("<H", _check_u16(len(data), f"{what} length")) + data


def encode_frame(opcode: int, msg_id: int, payload: bytes = b"") -> bytes:
    """Header + payload. Also used by test fixtures to build outbound frames."""
    header = _HEADER.pack(MAGIC, VERSION, _check_u16(msg_id, "msg_id"), opcode, 0, len(payload))
    return header + payload


def stream_input_frame(
    msg_id: int,
    text: str = "",
    flags: int = INPUT_FLAG_NONE,
    tokens: Optional[Sequence[int]] = None,
) -> bytes:
    """OP_STREAM_INPUT: mode u8, flags u8, token_count u16, 4 zero bytes, then text or u32 ids."""
    if tokens is None:
        payload = struct.pack("<BBH4x", MODE_TEXT, flags, 0) + text.encode("utf-8")
    else:
        if text:
            raise ValueError("send either text or tokens, not both")
        count = _check_u16(len(tokens), "token count")
        payload = struct.pack(f"<BBH4x{count}I", MODE_TOKENS, flags, count, *tokens)
    return encode_frame(OP_STREAM_INPUT, msg_id, payload)


def abort_frame(msg_id: int) -> bytes:
    # Must stay payload-free: the engine's reader does not consume an abort payload.
    return encode_frame(OP_ABORT, msg_id)


def mem_query_frame(msg_id: int, query: str, top_k: int = 5) -> bytes:
    """OP_MEM_QUERY in the engine's layout: top_k u16, 2 zero bytes, query text.

    The original Node client sent a 24-byte preamble the engine misreads (§1.5.3).
    """
    payload = struct.pack("<H2x", _check_u16(top_k, "top_k")) + query.encode("utf-8")
    return encode_frame(OP_MEM_QUERY, msg_id, payload)


@dataclass(frozen=True)
class Config:
    """OP_SET_CONFIG fields; defaults are the original client's (not the engine's)."""

    thinking_budget: int = 512
    temp: float = 1.0
    top_p: float = 0.95
    q_thresh: float = 0.001
    max_tokens: int = 64
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    repeat_last_n: int = 64
    frequency_penalty: float = 0.1
    presence_penalty: float = 0.1
    thinking_gate: bool = False


_CONFIG = struct.Struct("<IfffIffIffB")  # 41 bytes, field order of the engine code


def config_frame(msg_id: int, config: Config) -> bytes:
    payload = _CONFIG.pack(
        config.thinking_budget,
        config.temp,
        config.top_p,
        config.q_thresh,
        config.max_tokens,
        config.min_p,
        config.repeat_penalty,
        config.repeat_last_n,
        config.frequency_penalty,
        config.presence_penalty,
        1 if config.thinking_gate else 0,
    )
    return encode_frame(OP_SET_CONFIG, msg_id, payload)


def tool_return_frame(msg_id: int, name: str, result: str, call_id: int = 1, status: int = 0) -> bytes:
    """OP_TOOL_RETURN: call_id u16, status u16, name (u16-prefixed), result to the end."""
    payload = (
        struct.pack("<HH", _check_u16(call_id, "call_id"), _check_u16(status, "status"))
        + _prefixed(name, "tool name")
        + result.encode("utf-8")
    )
    return encode_frame(OP_TOOL_RETURN, msg_id, payload)


def mem_commit_frame(msg_id: int) -> bytes:
    return encode_frame(OP_MEM_COMMIT, msg_id)


def set_system_frame(msg_id: int, system: str) -> bytes:
    """OP_SET_SYSTEM: a JSON object {instructions, tools} or verbatim template text."""
    return encode_frame(OP_SET_SYSTEM, msg_id, system.encode("utf-8"))


def snapshot_save_frame(msg_id: int, path: str, stream_id: str = "") -> bytes:
    payload = _prefixed(path, "path") + _prefixed(stream_id, "stream id")
    return encode_frame(OP_SNAPSHOT_SAVE, msg_id, payload)


def snapshot_load_frame(msg_id: int, path: str) -> bytes:
    return encode_frame(OP_SNAPSHOT_LOAD, msg_id, path.encode("utf-8"))


def resume_frame(msg_id: int, action: int = RESUME_ACTION_CONTINUE) -> bytes:
    # CONTINUE is sent without a payload, exactly as the original client does.
    payload = b"" if action == RESUME_ACTION_CONTINUE else bytes([action])
    return encode_frame(OP_RESUME, msg_id, payload)


def ping_frame(msg_id: int) -> bytes:
    return encode_frame(OP_PING, msg_id)


def shutdown_frame(msg_id: int) -> bytes:
    return encode_frame(OP_SHUTDOWN, msg_id)


def probe_autonomic_frame(
    msg_id: int,
    prompt: str,
    candidates: Sequence[str] = (),
    max_decode_tokens: int = 1,
    min_certainty: float = 0.6,
) -> bytes:
    """OP_PROBE_AUTONOMIC: max_decode u16, count u16, min_certainty f32, prompt, candidates.

    Prompt and each candidate string are u16-length-prefixed; the engine uses only the
    first token of each candidate.
    """
    payload = struct.pack(
        "<HHf",
        _check_u16(max_decode_tokens, "max_decode_tokens"),
        _check_u16(len(candidates), "candidate count"),
        min_certainty,
    )
    payload += _prefixed(prompt, "prompt")
    payload += b"".join(_prefixed(candidate, "candidate") for candidate in candidates)
    return encode_frame(OP_PROBE_AUTONOMIC, msg_id, payload)


# ---------------------------------------------------------------------------------------------
# Decoding (engine -> host)


def _sync_prefix_length(buffer: bytearray, pos: int) -> int:
    """Length of the longest tail of buffer[pos:] that is a proper prefix of the sync pattern."""
    for length in range(min(len(_SYNC) - 1, len(buffer) - pos), 0, -1):
        if buffer.endswith(_SYNC[:length]):
            return length
    return 0


class FrameReader:
    """Incremental frame splitter for a byte stream read in arbitrary chunks.

    Bytes before the next "magic + version 1" pattern are discarded and counted in
    ``skipped``, so the reader recovers from garbage (a stray print on stdout, a frame of
    another protocol version) instead of losing the rest of the stream.
    """

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self.skipped = 0
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held back waiting for the rest of a frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> List[Frame]:
        """Adds bytes and returns every frame completed by them, in order."""
        buffer = self._buffer
        buffer += data
        frames: List[Frame] = []
        pos = 0
        while True:
            start = buffer.find(_SYNC, pos)
            if start < 0:
                # No header start: keep only a tail that could be the beginning of one.
                keep_from = len(buffer) - _sync_prefix_length(buffer, pos)
                self.skipped += keep_from - pos
                pos = keep_from
                break
            self.skipped += start - pos
            pos = start
            if len(buffer) - pos < HEADER_SIZE:
                break
            _, _, msg_id, opcode, _, length = _HEADER.unpack_from(buffer, pos)
            if length > self.max_payload:
                # Garbage that happens to contain the sync pattern: step past it.
                self.skipped += 1
                pos += 1
                continue
            end = pos + HEADER_SIZE + length
            if len(buffer) < end:
                break
            frames.append(Frame(msg_id, opcode, bytes(buffer[pos + HEADER_SIZE : end])))
            pos = end
        # One compaction per feed keeps a chunk of many small frames linear in its size.
        del buffer[:pos]
        return frames


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _require_size(payload: bytes, size: int, what: str) -> None:
    if len(payload) < size:
        raise ProtocolError(f"{what} payload too short: {len(payload)} bytes, need {size}")


@dataclass(frozen=True)
class Token:
    """One streamed token (OP_STREAM_CONTENT / OP_STREAM_THOUGHT)."""

    msg_id: int
    token_id: int
    clock: int
    layer_mask: int
    token_type: int
    piece: str  # raw vocabulary piece, spaces as U+2581

    @property
    def text(self) -> str:
        return self.piece.replace("\u2581", " ")


@dataclass(frozen=True)
class Content(Token):
    EVENT: ClassVar[str] = "content"


@dataclass(frozen=True)
class Thought(Token):
    EVENT: ClassVar[str] = "thought"


@dataclass(frozen=True)
class TurnComplete:
    EVENT: ClassVar[str] = "turn_complete"
    msg_id: int
    total_tok: int
    elapsed_ms: int
    tok_sec: float
    reason: int  # STOP_*


@dataclass(frozen=True)
class ToolCall:
    EVENT: ClassVar[str] = "tool_call"
    msg_id: int
    call_id: int
    tool_name: str
    args_json: str  # the model's raw argument text; not necessarily strict JSON


@dataclass(frozen=True)
class Status:
    EVENT: ClassVar[str] = "status"
    msg_id: int
    status: int  # STATUS_*
    is_gpu: bool
    active_slots: int
    archived_diffs: int
    flags: int
    tok_sec: float
    current_tok: int
    total_tok: int

    @property
    def is_saturated(self) -> bool:
        return bool(self.flags & STATUS_FLAG_SATURATED)


@dataclass(frozen=True)
class MemResponse:
    EVENT: ClassVar[str] = "mem_response"
    msg_id: int
    count: int
    status: int  # MEM_STATUS_*
    cursor: int
    total_tokens: int
    timestamps: Tuple[int, ...]  # episode start times, ms since the epoch


@dataclass(frozen=True)
class SnapshotStatus:
    EVENT: ClassVar[str] = "snapshot_status"
    msg_id: int
    status: int  # SNAPSHOT_STATUS_*
    active_slots: int
    clock: int
    stream_id: str


@dataclass(frozen=True)
class AutonomicResult:
    EVENT: ClassVar[str] = "autonomic_result"
    msg_id: int
    winning_idx: int
    confidence: float
    entropy: float
    cost_ms: float
    text: str


@dataclass(frozen=True)
class Pong:
    EVENT: ClassVar[str] = "pong"
    msg_id: int


@dataclass(frozen=True)
class Error:
    """OP_ERROR from the engine, or (local=True) a problem the client itself detected."""

    EVENT: ClassVar[str] = "error"
    msg_id: int
    message: str
    local: bool = False


@dataclass(frozen=True)
class UnknownFrame:
    """An opcode this client does not know (e.g. a newer engine's extension)."""

    EVENT: ClassVar[str] = "unknown"
    msg_id: int
    opcode: int
    payload: bytes


_TOKEN = struct.Struct("<IQQBxH")
_TURN_COMPLETE = struct.Struct("<IIfB3x")
_STATUS = struct.Struct("<BBHHHfII")
_MEM_RESPONSE = struct.Struct("<BBHI")
_SNAPSHOT_STATUS = struct.Struct("<BxHQH")
_AUTONOMIC_RESULT = struct.Struct("<HfffH")  # floats at offsets 2, 6, 10: unaligned on purpose


def _decode_token(kind: type, frame: Frame) -> Token:
    payload = frame.payload
    _require_size(payload, _TOKEN.size, "token")
    token_id, clock, layer_mask, token_type, text_len = _TOKEN.unpack_from(payload)
    _require_size(payload, _TOKEN.size + text_len, "token")
    piece = _text(payload[_TOKEN.size : _TOKEN.size + text_len])
    return kind(frame.msg_id, token_id, clock, layer_mask, token_type, piece)


def _decode_turn_complete(frame: Frame) -> TurnComplete:
    _require_size(frame.payload, _TURN_COMPLETE.size, "turn complete")
    return TurnComplete(frame.msg_id, *_TURN_COMPLETE.unpack_from(frame.payload))


def _decode_tool_call(frame: Frame) -> ToolCall:
    payload = frame.payload
    _require_size(payload, 4, "tool call")
    call_id, name_len = struct.unpack_from("<HH", payload)
    _require_size(payload, 4 + name_len, "tool call")
    return ToolCall(frame.msg_id, call_id, _text(payload[4 : 4 + name_len]), _text(payload[4 + name_len :]))


def _decode_status(frame: Frame) -> Status:
    _require_size(frame.payload, _STATUS.size, "status")
    status, is_gpu, *rest = _STATUS.unpack_from(frame.payload)
    return Status(frame.msg_id, status, bool(is_gpu), *rest)


def _decode_mem_response(frame: Frame) -> MemResponse:
    payload = frame.payload
    _require_size(payload, _MEM_RESPONSE.size, "mem response")
    count, status, cursor, total_tokens = _MEM_RESPONSE.unpack_from(payload)
    _require_size(payload, _MEM_RESPONSE.size + 8 * count, "mem response")
    timestamps = struct.unpack_from(f"<{count}Q", payload, _MEM_RESPONSE.size)
    return MemResponse(frame.msg_id, count, status, cursor, total_tokens, timestamps)


def _decode_snapshot_status(frame: Frame) -> SnapshotStatus:
    payload = frame.payload
    _require_size(payload, _SNAPSHOT_STATUS.size, "snapshot status")
    status, active_slots, clock, id_len = _SNAPSHOT_STATUS.unpack_from(payload)
    end = _SNAPSHOT_STATUS.size + id_len
    _require_size(payload, end, "snapshot status")
    return SnapshotStatus(frame.msg_id, status, active_slots, clock, _text(payload[_SNAPSHOT_STATUS.size : end]))


def _decode_autonomic_result(frame: Frame) -> AutonomicResult:
    payload = frame.payload
    _require_size(payload, _AUTONOMIC_RESULT.size, "autonomic result")
    winning_idx, confidence, entropy, cost_ms, text_len = _AUTONOMIC_RESULT.unpack_from(payload)
    end = _AUTONOMIC_RESULT.size + text_len
    _require_size(payload, end, "autonomic result")
    text = _text(payload[_AUTONOMIC_RESULT.size : end])
    return AutonomicResult(frame.msg_id, winning_idx, confidence, entropy, cost_ms, text)


_DECODERS = {
    OP_STREAM_CONTENT: lambda frame: _decode_token(Content, frame),
    OP_STREAM_THOUGHT: lambda frame: _decode_token(Thought, frame),
    OP_TURN_COMPLETE: _decode_turn_complete,
    OP_TOOL_CALL: _decode_tool_call,
    OP_STATUS: _decode_status,
    OP_MEM_RESPONSE: _decode_mem_response,
    OP_SNAPSHOT_STATUS: _decode_snapshot_status,
    OP_AUTONOMIC_RESULT: _decode_autonomic_result,
    OP_PONG: lambda frame: Pong(frame.msg_id),
    OP_ERROR: lambda frame: Error(frame.msg_id, _text(frame.payload)),
}


def decode_message(frame: Frame):
    """Typed message for an outbound frame; raises ProtocolError if its payload is malformed.

    Payloads longer than the layout are accepted (the extra bytes are ignored): that is how
    the protocol adds fields without breaking older clients.
    """
    decoder = _DECODERS.get(frame.opcode)
    if decoder is None:
        return UnknownFrame(frame.msg_id, frame.opcode, frame.payload)
    return decoder(frame)
