"""Shared support of the Python end-to-end tests: the real `channel` binary in --serve mode,
driven through the Python client in clients/python.

Environment: CHANNEL_BINARY (the engine) and CHANNEL_VOCAB (a Gemma 4 vocabulary GGUF to
synthesize tiny models with). Without them every module is skipped. CHANNEL_E2E_SCRIPTED_MODEL
names the scripted model's description if not tests/e2e/scripted_model.json (one written for the
vocabulary in CHANNEL_VOCAB). CHANNEL_E2E_STDERR=inherit shows the engines' logs (default:
discarded).

A test module's setUpModule calls ``e2e_support.set_up_module(*models)`` and its tearDownModule
calls ``e2e_support.tear_down_module()``: its engines then run in a scratch folder of their own
(relative snapshot paths and stray files land there). Each model is synthesized once per process
(by the first module that names it, or on first use) and removed at exit:

* ``plain``: random weights; long decodes of no set text (abort during decode, determinism,
  snapshots).
* ``scripted``: tests/e2e/scripted_model.json (or CHANNEL_E2E_SCRIPTED_MODEL); its greedy continuation of each scripted token is
  the next token of its script, so turns have exact expected texts (``EXPECT``).
* ``recall``: a scripted model whose answer only memory can give (``RECALL``; `channel model
  synth --recall-cue`).

Tests derive from ``EngineTestCase``: ``self.client`` is a started engine (``model`` and
``config`` class attributes), ``start_engine()`` starts more; all are killed after the test.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))

from channel_client import Client, Content, Error, Pong, Status, Thought, Turn  # noqa: E402
from channel_client.protocol import MAGIC, STATUS_IDLE, VERSION  # noqa: E402

BINARY = os.environ.get("CHANNEL_BINARY", "")
VOCAB = os.environ.get("CHANNEL_VOCAB", "")
ENGINE_STDERR = None if os.environ.get("CHANNEL_E2E_STDERR") == "inherit" else subprocess.DEVNULL
# Longest wait for any single reply.
TIMEOUT = 60.0
# Factor on the suite's latency bounds (e.g. "exits within a second"): CTest's run on lavapipe
# sets CHANNEL_E2E_TIME_SCALE, where one 512-token step of the test model, the engine's
# cancellation granularity there, takes about a second on a busy 2-core machine.
TIME_SCALE = float(os.environ.get("CHANNEL_E2E_TIME_SCALE", "1"))
# The machine is shared: one compute thread per engine. CHANNEL_E2E_ENGINE_ARGS adds options
# (e.g. --gpu: CTest runs the suite once more on the Vulkan backend).
ENGINE_ARGS = ("--threads", "1", *os.environ.get("CHANNEL_E2E_ENGINE_ARGS", "").split())

_HERE = os.path.dirname(os.path.abspath(__file__))
# The scripted model's description: tests/e2e/scripted_model.json (over Gemma 4's vocabulary) unless
# CHANNEL_E2E_SCRIPTED_MODEL names another of the same shape for the vocabulary in CHANNEL_VOCAB
# (tests/reliability/scripted_tiny_vocab_model.json with channel-tiny's, whose small output layer
# makes the suite fast on lavapipe).
_SCRIPTED_PATH = os.environ.get("CHANNEL_E2E_SCRIPTED_MODEL") or os.path.join(_HERE, "..", "scripted_model.json")
with open(_SCRIPTED_PATH, encoding="utf-8") as _f:
    SCRIPTED = json.load(_f)
# The ``recall`` model's cue: after a prompt (which ends in <channel|>) it writes ``memory``, and
# ``answer`` wherever the KV of ``memory`` is visible to its global layer: after ``memory`` in the
# stream, or from the first token on when an episode holding it is recalled.
RECALL = SimpleNamespace(memory="Paris", answer="London")
_SYNTH_ARGS = {
    "plain": ["--arch", "gemma4", "--layers", "2", "--period", "2", "--embd", "64", "--ffn", "64"],
    "scripted": SCRIPTED["synth_args"] + [arg for text in SCRIPTED["scripts"].values() for arg in ("--script", text)],
    "recall": ["--arch", "gemma4", "--layers", "2", "--period", "2", "--embd", "64", "--ffn", "64",
               "--script", "<channel|>" + RECALL.memory, "--recall-cue", RECALL.memory, RECALL.answer],
}


# ---------------------------------------------------------------------------------------------
# What the scripted model writes, derived from the script texts (never from engine output).


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start) + len(start)
    return text[begin : text.index(end, begin)]


_ANSWER = SCRIPTED["scripts"]["answer"]
_AFTER_TOOL = SCRIPTED["scripts"]["after_tool"]
_THOUGHT = SCRIPTED["scripts"]["thought"]
_CALL = _between(_ANSWER, "<|tool_call>", "<tool_call|>")  # call:NAME{ARGS}
# The thought script ends in '.', and the answer script continues '.' with the paragraph break.
assert _THOUGHT.endswith(".") and ".\n\n" in _ANSWER, "scripted_model.json changed shape"

EXPECT = SimpleNamespace(
    # A user turn without INPUT_FLAG_REASON ends with the empty thought block, whose last token is
    # <channel|>: the answer script runs up to and including its first paragraph break (16+
    # response tokens), where the turn yields (the '\n\n' token is streamed and held).
    first_paragraph=_between(_ANSWER, "<channel|>", "\n\n") + "\n\n",
    # After the held paragraph break the answer script goes on up to its tool call.
    continuation=_between(_ANSWER, "\n\n", "<|tool_call>"),
    tool_name=_CALL[_CALL.index(":") + 1 : _CALL.index("{")],
    tool_args=_CALL[_CALL.index("{") :],
    # A tool response is rendered ending in '<|channel>thought\n': the after_tool script continues
    # that '\n' up to <turn|>, inside the thought.
    after_tool_thought=_between(_AFTER_TOOL, "thought\n", "<turn|>"),
    # A RAW input that opens a thought and ends with the thought script's first word ...
    thought_first_word=_THOUGHT.split(" ")[0],
    # ... continues with the rest of the thought script, then the paragraph break after its '.'.
    thought_rest=_THOUGHT[len(_THOUGHT.split(" ")[0]) :] + "\n\n",
)
# RAW + INPUT_FLAG_REASON: a user turn whose model turn is inside a thought, at its first word.
THOUGHT_PROMPT = "<|turn>user\nThink\n<turn|>\n<|turn>model\n<|channel>thought\n" + EXPECT.thought_first_word


def first_words(text: str, count: int) -> str:
    """The first ``count`` space-separated words of ``text`` (each one token in the scripts)."""
    return " ".join(text.split(" ")[:count])


# ---------------------------------------------------------------------------------------------
# Binary, models and scratch folders.

_WORKDIR: Optional[tempfile.TemporaryDirectory] = None
_MODELS: Dict[str, str] = {}
_START_DIRS: List[str] = []


def binary() -> str:
    """The engine path; waits a while if it is missing (the binary is rebuilt now and then)."""
    deadline = time.monotonic() + TIMEOUT
    while not os.access(BINARY, os.X_OK):
        if time.monotonic() > deadline:
            raise RuntimeError(f"CHANNEL_BINARY {BINARY!r} is not an executable file")
        time.sleep(0.5)
    return BINARY


def _workdir() -> str:
    global _WORKDIR
    if _WORKDIR is None:
        _WORKDIR = tempfile.TemporaryDirectory(prefix="channel-e2e-")
        atexit.register(_WORKDIR.cleanup)
    return _WORKDIR.name


def model_path(kind: str) -> str:
    """Path of the ``plain`` or ``scripted`` model, synthesized on first use."""
    if kind not in _MODELS:
        path = os.path.join(_workdir(), f"{kind}-gemma4.gguf")
        subprocess.run([binary(), "model", "synth", "--vocab", VOCAB, "--out", path, *_SYNTH_ARGS[kind]],
                       check=True, stdout=subprocess.DEVNULL, stderr=ENGINE_STDERR)
        _MODELS[kind] = path
    return _MODELS[kind]


def set_up_module(*models: str) -> None:
    """Skips the module without the environment; otherwise synthesizes ``models`` (if not yet
    done) and enters a fresh scratch folder."""
    if not (BINARY and VOCAB):
        raise unittest.SkipTest("CHANNEL_BINARY and CHANNEL_VOCAB are not set")
    for kind in models:
        model_path(kind)
    _START_DIRS.append(os.getcwd())
    os.chdir(tempfile.mkdtemp(prefix="scratch-", dir=_workdir()))


def tear_down_module() -> None:
    scratch = os.getcwd()
    os.chdir(_START_DIRS.pop())
    shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Frames and turns.


# msg_id of frames a test builds itself: far above the ids the client allocates (1, 2, ...).
RAW_MSG_ID = 0xF000


def header(msg_id: int, opcode: int, payload_len: int, magic: int = MAGIC, version: int = VERSION) -> bytes:
    """A raw inbound header, for frames the client would never build."""
    return struct.pack("<IHHHHI", magic, version, msg_id, opcode, 0, payload_len)


def tokens(turn: Turn) -> List[Any]:
    """The turn's token frames (Content and Thought), in order."""
    return [e for e in turn.events if isinstance(e, (Content, Thought)) and e.msg_id == turn.msg_id]


def signature(turn: Turn) -> Tuple[Any, ...]:
    """Everything a greedy turn must reproduce: token frames (kind, id, clock), tool calls, reason."""
    frames = tuple((type(e).__name__, e.token_id, e.clock) for e in tokens(turn))
    calls = tuple((c.tool_name, c.args_json) for c in turn.tool_calls)
    return frames, calls, turn.complete.reason, turn.complete.total_tok


def binary_entropy(p: float) -> float:
    return -sum(q * math.log(q) for q in (p, 1.0 - p) if q > 0.0)


class EngineTestCase(unittest.TestCase):
    """``self.client``: an engine on ``model`` with ``config`` (greedy by default), ready.

    With ``starts_engine = False`` tests start their engines themselves (``start_engine``).
    """

    model = "scripted"
    config: Dict[str, Any] = {"temp": 0.0, "max_tokens": 64}
    # Options of ``self.client``'s engine (e.g. --no-memory).
    engine_args: Sequence[str] = ()
    starts_engine = True

    def setUp(self) -> None:
        self.client = self.start_engine(extra_args=self.engine_args) if self.starts_engine else None

    def start_engine(self, kind: Optional[str] = None, extra_args: Sequence[str] = (), **config: Any) -> Client:
        client = Client(binary(), model_path(kind or self.model), [*ENGINE_ARGS, *extra_args],
                        stderr=ENGINE_STDERR).start()
        self.addCleanup(client.kill)
        client.wait_ready(timeout=TIMEOUT)
        client.set_config(**{**self.config, **config})
        return client

    def collect(self, msg_id: int, client: Optional[Client] = None) -> Turn:
        """Events up to the TURN_COMPLETE of ``msg_id``."""
        return (client or self.client).collect_turn(msg_id, timeout=TIMEOUT)

    def events_until(self, predicate, client: Optional[Client] = None) -> List[Any]:
        """Every event consumed up to and including the first that satisfies ``predicate``."""
        seen: List[Any] = []

        def done(event: Any) -> bool:
            seen.append(event)
            return predicate(event)

        (client or self.client).wait_for(done, timeout=TIMEOUT)
        return seen

    def reply(self, msg_id: int, kinds, client: Optional[Client] = None) -> Any:
        """The first event of one of ``kinds`` (or an ERROR) for ``msg_id``."""
        kinds = tuple(kinds) + (Error,)
        return (client or self.client).wait_for(lambda e: isinstance(e, kinds) and e.msg_id == msg_id,
                                                timeout=TIMEOUT)

    def wait_idle(self, msg_id: int, client: Optional[Client] = None) -> Status:
        return (client or self.client).wait_for(
            lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_IDLE, timeout=TIMEOUT)

    def ping_answered(self, client: Optional[Client] = None) -> bool:
        """A PING gets its PONG (not an ERROR, not silence)."""
        client = client or self.client
        return isinstance(self.reply(client.ping(), (Pong,), client), Pong)

    def assert_turn(self, turn: Turn, reason: int, content: str = "", thought: str = "") -> None:
        """Exact content and thought texts and stop reason; TURN_COMPLETE counts every token frame."""
        self.assertEqual((turn.content, turn.thought, turn.reason), (content, thought, reason))
        self.assertEqual(turn.complete.total_tok, len(tokens(turn)))
