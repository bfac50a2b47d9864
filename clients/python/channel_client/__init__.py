"""Python client for the Channel engine's stdin/stdout frame protocol (stdlib only)."""

from .client import EVENTS, Client, EngineExited, Exit, Turn
from .framing import (
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
from .protocol import *  # noqa: F401,F403  (opcodes and enumerations)
