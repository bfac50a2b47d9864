"""Process-owning client for a Channel engine started with ``--serve``.

The engine is a child process speaking frames on its stdin/stdout; its stderr (human logs)
is passed through. A reader thread decodes every outbound frame into a message object (see
``framing``) and delivers it twice: to callbacks registered with ``on()`` (run on the reader
thread) and to the ``events`` queue, which the blocking helpers ``next_event``,
``wait_for``, ``wait_ready`` and ``collect_turn`` consume.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Optional, Sequence, Union

from . import framing
from .framing import (
    AutonomicResult,
    Config,
    Content,
    Error,
    MemResponse,
    Pong,
    SnapshotStatus,
    Status,
    Thought,
    ToolCall,
    TurnComplete,
    UnknownFrame,
)
from .protocol import (
    INPUT_FLAG_NONE,
    INPUT_FLAG_RAW,
    INPUT_FLAG_REASON,
    MAX_PAYLOAD,
    RESUME_ACTION_CLOSE_THOUGHT,
    RESUME_ACTION_CONTINUE,
)

_READ_SIZE = 64 * 1024


class EngineExited(ConnectionError):
    """The engine process ended while the caller was waiting for (or writing to) it."""

    def __init__(self, returncode: Optional[int]) -> None:
        super().__init__("engine input is closed" if returncode is None else f"engine exited with code {returncode}")
        self.returncode = returncode


@dataclass(frozen=True)
class Exit:
    """The engine process ended; always the last event."""

    EVENT: ClassVar[str] = "exit"
    returncode: Optional[int]  # negative: killed by that signal


# Every event name a callback can be registered for.
EVENTS = frozenset(
    kind.EVENT
    for kind in (
        Content,
        Thought,
        ToolCall,
        TurnComplete,
        Status,
        SnapshotStatus,
        AutonomicResult,
        MemResponse,
        Pong,
        Error,
        UnknownFrame,
        Exit,
    )
)


@dataclass(frozen=True)
class Turn:
    """Everything received while waiting for one TURN_COMPLETE (see ``collect_turn``)."""

    msg_id: Optional[int]
    events: List[Any]  # every event in arrival order, including other msg_ids
    complete: TurnComplete

    def _mine(self, kind: type) -> List[Any]:
        return [e for e in self.events if isinstance(e, kind) and (self.msg_id is None or e.msg_id == self.msg_id)]

    @property
    def content(self) -> str:
        return "".join(e.text for e in self._mine(Content))

    @property
    def thought(self) -> str:
        return "".join(e.text for e in self._mine(Thought))

    @property
    def tool_calls(self) -> List[ToolCall]:
        return self._mine(ToolCall)

    @property
    def reason(self) -> int:
        return self.complete.reason


class _Waiter:
    """A one-shot slot a caller blocks on until the reader thread fills it."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def resolve(self, value: Any) -> None:
        self._value = value
        self._done.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._done.set()

    def wait(self, timeout: Optional[float]) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"no reply within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._value


class Client:
    """Drives one engine process.

    ``binary`` is the engine path, or an argv prefix such as ``[sys.executable, "fake.py"]``
    (useful for interpreters and wrappers like ``taskset``). The command run is
    ``binary --model <model> --serve *extra_args``.

    Set ``queue_events=False`` when only callbacks are used, so unread events do not pile
    up in the queue; the blocking helpers then cannot be used.
    """

    def __init__(
        self,
        binary: Union[str, os.PathLike, Sequence[str]],
        model: Union[str, os.PathLike],
        extra_args: Sequence[str] = (),
        *,
        stderr: Any = None,
        queue_events: bool = True,
        max_payload: int = MAX_PAYLOAD,
    ) -> None:
        prefix = [os.fspath(binary)] if isinstance(binary, (str, os.PathLike)) else list(binary)
        self.argv = prefix + ["--model", os.fspath(model), "--serve", *extra_args]
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.config = Config()  # last configuration sent; set_config() updates it
        self.returncode: Optional[int] = None
        self._stderr = stderr
        self._queue_events = queue_events
        self._reader = framing.FrameReader(max_payload)
        self._proc: Optional[subprocess.Popen] = None
        self._reader_thread: Optional[threading.Thread] = None
        self._callbacks: Dict[str, List[Callable[[Any], None]]] = {}
        self._probes: Dict[int, _Waiter] = {}
        self._lock = threading.Lock()  # msg ids, callbacks, pending probes
        self._write_lock = threading.Lock()  # keeps frames whole on stdin
        self._next_id = 1
        self._exited = threading.Event()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> "Client":
        if self._proc is not None:
            raise RuntimeError("client already started")
        self._proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )
        self._reader_thread = threading.Thread(target=self._read_loop, name="channel-reader", daemon=True)
        self._reader_thread.start()
        return self

    def __enter__(self) -> "Client":
        return self if self._proc is not None else self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc else None

    def shutdown(self, timeout: float = 5.0) -> Optional[int]:
        """Sends SHUTDOWN, closes stdin, waits up to ``timeout`` s, then kills. Returns the exit code.

        The wait matters: the engine writes its episodic store back to disk on exit.
        """
        if self._proc is None:
            return None
        if not self._exited.is_set():
            try:
                self._send(framing.shutdown_frame)
            except EngineExited:
                pass
            self._close_stdin()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._join_reader()
        return self.returncode

    def kill(self) -> Optional[int]:
        """Ends the engine immediately (SIGKILL). Returns the exit code."""
        if self._proc is None:
            return None
        self._proc.kill()
        self._join_reader()
        return self.returncode

    # -- events -----------------------------------------------------------------------------

    def on(self, event: str, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        """Calls ``callback(message)`` on the reader thread for every ``event``; returns callback.

        Event names (``EVENTS``): content, thought, tool_call, turn_complete, status,
        snapshot_status, autonomic_result, mem_response, pong, error, unknown, exit.
        """
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}")
        with self._lock:
            self._callbacks.setdefault(event, []).append(callback)
        return callback

    def off(self, event: str, callback: Callable[[Any], None]) -> None:
        with self._lock:
            self._callbacks.get(event, []).remove(callback)

    def next_event(self, timeout: Optional[float] = None) -> Any:
        """The next queued event; TimeoutError if none arrives, EngineExited once all are read."""
        try:
            return self.events.get_nowait()
        except queue.Empty:
            if self._exited.is_set():
                raise EngineExited(self.returncode) from None
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout} s") from None

    def wait_for(self, predicate: Callable[[Any], bool], timeout: Optional[float] = None) -> Any:
        """Consumes queued events until one satisfies ``predicate`` and returns it.

        Raises EngineExited if the process ends first, TimeoutError after ``timeout`` s.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = self.next_event(remaining)
            if predicate(event):
                return event
            if isinstance(event, Exit):
                raise EngineExited(event.returncode)

    def wait_ready(self, timeout: Optional[float] = None) -> Status:
        """Waits for the unsolicited startup STATUS (msg_id 0) the engine sends once loaded."""
        return self.wait_for(lambda e: isinstance(e, Status) and e.msg_id == 0, timeout)

    def collect_turn(self, msg_id: Optional[int] = None, timeout: Optional[float] = None) -> Turn:
        """Consumes events up to the TURN_COMPLETE for ``msg_id`` (any msg_id if None).

        A turn ends at END_OF_TURN, MAX_TOKENS, ABORTED, TOOL_CALL or ELASTIC_YIELD; after an
        elastic yield send ``send_resume()`` and collect again with the resume's msg_id.
        The STATUS(idle) that follows TURN_COMPLETE stays in the queue.
        """
        events: List[Any] = []

        def ends_turn(event: Any) -> bool:
            events.append(event)
            return isinstance(event, TurnComplete) and (msg_id is None or event.msg_id == msg_id)

        complete = self.wait_for(ends_turn, timeout)
        return Turn(msg_id, events, complete)

    # -- requests (each returns the msg_id it used) ----------------------------------------

    def send_input(
        self, text: str = "", reason: bool = False, raw: bool = False, tokens: Optional[Sequence[int]] = None
    ) -> int:
        """A user turn (templated by the engine unless ``raw``), or token ids if ``tokens``."""
        flags = INPUT_FLAG_NONE | (INPUT_FLAG_REASON if reason else 0) | (INPUT_FLAG_RAW if raw else 0)
        return self._send(framing.stream_input_frame, text, flags, tokens)

    def send_resume(self, close_thought: bool = False) -> int:
        """Continues after an ELASTIC_YIELD; ``close_thought`` ends the thought channel first."""
        action = RESUME_ACTION_CLOSE_THOUGHT if close_thought else RESUME_ACTION_CONTINUE
        return self._send(framing.resume_frame, action)

    def send_probe_autonomic(
        self, prompt: str, candidates: Sequence[str] = (), max_decode_tokens: int = 1, min_certainty: float = 0.6
    ) -> int:
        return self._send(framing.probe_autonomic_frame, prompt, candidates, max_decode_tokens, min_certainty)

    def probe(
        self,
        prompt: str,
        candidates: Sequence[str] = (),
        max_decode_tokens: int = 1,
        min_certainty: float = 0.6,
        timeout: Optional[float] = 30.0,
    ) -> AutonomicResult:
        """Sends a probe and blocks for its AUTONOMIC_RESULT (matched by msg_id).

        The engine silently drops malformed probes, hence the timeout. The result is also
        delivered as an ``autonomic_result`` event.
        """
        waiter = _Waiter()
        with self._lock:
            msg_id = self._allocate_id()
            self._probes[msg_id] = waiter
        try:
            self._write(framing.probe_autonomic_frame(msg_id, prompt, candidates, max_decode_tokens, min_certainty))
            return waiter.wait(timeout)
        finally:
            with self._lock:
                self._probes.pop(msg_id, None)

    def send_system(self, system: Union[str, Dict[str, Any]]) -> int:
        """System prompt: a dict ``{instructions, tools}`` is sent as JSON, a string verbatim."""
        text = system if isinstance(system, str) else json.dumps(system)
        return self._send(framing.set_system_frame, text)

    def send_tool_return(self, name: str, result: Any, call_id: int = 1, status: int = 0) -> int:
        """Result of a tool call; non-string results are sent as JSON."""
        text = result if isinstance(result, str) else json.dumps(result)
        return self._send(framing.tool_return_frame, name, text, call_id, status)

    def snapshot_save(self, path: str, stream_id: str = "") -> int:
        return self._send(framing.snapshot_save_frame, path, stream_id)

    def snapshot_load(self, path: str) -> int:
        return self._send(framing.snapshot_load_frame, path)

    def abort(self) -> int:
        return self._send(framing.abort_frame)

    def mem_query(self, query: str, top_k: int = 5) -> int:
        return self._send(framing.mem_query_frame, query, top_k)

    def mem_commit(self) -> int:
        return self._send(framing.mem_commit_frame)

    def set_config(self, **fields: Any) -> int:
        """Updates the given ``Config`` fields and sends the whole 41-byte configuration.

        Fields not given keep their previous value (initially the original client's
        defaults); unknown names raise TypeError.
        """
        config = dataclasses.replace(self.config, **fields)
        msg_id = self._send(framing.config_frame, config)
        self.config = config
        return msg_id

    def ping(self) -> int:
        return self._send(framing.ping_frame)

    # -- internals --------------------------------------------------------------------------

    def _allocate_id(self) -> int:
        # Ids wrap within 1..65535: 0 is reserved for unsolicited engine frames.
        msg_id = self._next_id
        self._next_id = msg_id % 0xFFFF + 1
        return msg_id

    def _send(self, encode: Callable[..., bytes], *args: Any) -> int:
        with self._lock:
            msg_id = self._allocate_id()
        self._write(encode(msg_id, *args))
        return msg_id

    def _write(self, frame: bytes) -> None:
        if self._proc is None:
            raise RuntimeError("client not started")
        with self._write_lock:
            try:
                self._proc.stdin.write(frame)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError):  # ValueError: stdin already closed
                raise EngineExited(self._proc.poll()) from None

    def _close_stdin(self) -> None:
        with self._write_lock:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass

    def _join_reader(self) -> None:
        if self._reader_thread is not threading.current_thread():
            self._reader_thread.join()

    def _read_loop(self) -> None:
        stdout = self._proc.stdout
        while True:
            data = stdout.read1(_READ_SIZE)  # whatever is available, without waiting for a full block
            if not data:
                break
            skipped_before = self._reader.skipped
            frames = self._reader.feed(data)
            if self._reader.skipped != skipped_before:
                skipped = self._reader.skipped - skipped_before
                self._dispatch(Error(0, f"skipped {skipped} bytes of non-frame data on stdout", local=True))
            for frame in frames:
                try:
                    message = framing.decode_message(frame)
                except framing.ProtocolError as error:
                    message = Error(frame.msg_id, f"malformed frame 0x{frame.opcode:04x}: {error}", local=True)
                self._dispatch(message)
        stdout.close()
        if self._reader.pending:
            self._dispatch(Error(0, f"stdout closed inside a frame ({self._reader.pending} bytes)", local=True))
        self.returncode = self._proc.wait()
        self._close_stdin()
        with self._lock:
            probes = list(self._probes.values())
        for waiter in probes:
            waiter.fail(EngineExited(self.returncode))
        self._dispatch(Exit(self.returncode))
        self._exited.set()

    def _dispatch(self, message: Any) -> None:
        if isinstance(message, AutonomicResult):
            with self._lock:
                waiter = self._probes.get(message.msg_id)
            if waiter is not None:
                waiter.resolve(message)
        with self._lock:
            callbacks = list(self._callbacks.get(message.EVENT, ()))
        for callback in callbacks:
            try:
                callback(message)
            except Exception:
                # A failing callback must not kill the reader thread (and with it the stream).
                traceback.print_exc(file=sys.stderr)
        if self._queue_events:
            self.events.put(message)
