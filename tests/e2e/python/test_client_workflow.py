"""End-to-end: the original Channel client's workflow, as its TUI runs it (public repo
Sullux/channel: tui/index.js, tui/lib/ui/controller/dispatch.js, tui/lib/afsm/machines/chat.js),
sent frame for frame in the same order on the scripted model, with every reply checked:

* boot: SET_CONFIG (the TUI's runtime settings) right after the engine starts, before it is
  ready; at the ready STATUS, SNAPSHOT_LOAD of `.memory/.snapshot.bin` when the file exists,
  else SET_SYSTEM with the instructions and tool declarations (then, once idle with slots,
  the boot snapshot);
* a user turn: the thinking-gate probe first, then STREAM_INPUT with DIRECT when the probe picks
  "0" with confidence >= 0.80, REASON otherwise;
* at an elastic yield: inside a thought the adaptive-thinking probe, then RESUME with
  CLOSE_THOUGHT when it picks "0" with confidence >= 0.80, plain RESUME otherwise; outside a
  thought plain RESUME; at a tool call, TOOL_RETURN;
* at END_OF_TURN: the backlog-triage probe for a suspended background task ("0" satisfied,
  "1" execute now: a nudge turn, "2" defer), then the snapshot the TUI saves 5 s later (not
  waited for here: the order of frames is what matters, the timing is the client's).

The probes' winners depend on the model's random weights, so the test takes the client's
decisions from the replies, as the client does, and checks the turn each decision leads to.
One turn is not the TUI's own: the scripted model thinks only after a RAW prompt that opens
the thought (THOUGHT_PROMPT), and the adaptive-thinking probe needs a yield inside a thought.
"""

import math
import os
import unittest

import e2e_support as support
from channel_client import AutonomicResult, SnapshotStatus, Status, Thought, framing
from channel_client.protocol import (INPUT_FLAG_DIRECT, INPUT_FLAG_REASON, SNAPSHOT_STATUS_LOADED,
                                     SNAPSHOT_STATUS_SAVED, STATUS_ENCODING, STATUS_IDLE, STOP_ELASTIC_YIELD,
                                     STOP_END_OF_TURN, STOP_TOOL_CALL)
from e2e_support import EXPECT, THOUGHT_PROMPT, EngineTestCase


def setUpModule():
    support.set_up_module("scripted")


def tearDownModule():
    support.tear_down_module()


# tui/config.json's runtime settings, sent as they are (the scripted tokens stay far ahead of
# every other token at this temperature and with these penalties).
TUI_RUNTIME = dict(thinking_budget=256, max_tokens=4096, temp=0.7, top_p=0.95, min_p=0.05, repeat_penalty=1.1,
                   repeat_last_n=64, frequency_penalty=0.1, presence_penalty=0.1, q_thresh=0.0, thinking_gate=True)
SNAPSHOT = os.path.join(".memory", ".snapshot.bin")
# Shaped as the TUI builds it from its prompt files: instructions, and tools with JSON-schema
# parameters.
SYSTEM = {
    "instructions": "You are a careful agent. Use the tools when they help.",
    "tools": [
        {"name": EXPECT.tool_name, "description": "Looks something up",
         "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what"}},
                        "required": []}},
        {"name": "done", "description": "Marks the active step done",
         "parameters": {"type": "object", "properties": {}, "required": []}},
    ],
}
# The client's decision threshold on a probe's confidence.
CONFIDENT = 0.80
GATE_PROMPT = "Regarding the user's message:\n0: I have an immediate answer\n1: I need to think\nDecision:"
ADAPTIVE_PROMPT = ("Autonomic Reasoning Assessment\nEvaluate whether the thoughts generated so far are sufficient "
                   "to deliver the response to the user, or if further reasoning is needed:\n"
                   "0: Reasoning sufficient, deliver response now\n1: Further reasoning needed\nDecision:")


def backlog_prompt(task: str) -> str:
    return ("Autonomic Backlog Triage\nEvaluate whether this pending background task has been completed, should be "
            f"executed now, or should be deferred:\nTask: \"{task}\"\n0: Satisfied/Completed\n1: Execute now\n"
            "2: Defer\nDecision: ")


def user_turn_text(seq: int, message: str) -> str:
    # The TUI sends a pointer to the saved message and its first 512 bytes.
    return f"[Event: not{100 + seq} | Source: msg/user/{1000 + seq}.txt]\n{message[:512]}"


def picks_first(result: AutonomicResult) -> bool:
    return result.winning_idx == 0 and result.confidence >= CONFIDENT


# What each path through a turn streams, as (content, thought, reason) per TURN_COMPLETE; derived
# from the scripts (see tests/e2e/scripted_model.json's walkthrough).
AFTER_TOOL_RETURN = [("", EXPECT.after_tool_thought, STOP_END_OF_TURN)]
# Without REASON the model turn opens with the empty thought block: the answer script runs to
# its paragraph break (a yield outside a thought), RESUME goes on to the tool call.
PLAIN_TURN = [(EXPECT.first_paragraph, "", STOP_ELASTIC_YIELD),
              (EXPECT.continuation, "", STOP_TOOL_CALL)] + AFTER_TOOL_RETURN
# With REASON the rendered turn ends in '<|turn>model\n', whose '\n' the after_tool script
# continues (outside any thought) up to <turn|>.
REASON_TURN = [(EXPECT.after_tool_thought, "", STOP_END_OF_TURN)]
THOUGHT_YIELD = ("", EXPECT.thought_rest, STOP_ELASTIC_YIELD)
# RESUME CLOSE_THOUGHT feeds <channel|> instead of the held '\n\n': the answer script as content.
AFTER_CLOSE_THOUGHT = PLAIN_TURN
# Plain RESUME feeds the held '\n\n': the answer script goes on after it, still in the thought.
AFTER_CONTINUE_THOUGHT = [("", EXPECT.continuation, STOP_TOOL_CALL)] + AFTER_TOOL_RETURN


class ClientWorkflowTest(EngineTestCase):
    starts_engine = False

    def start_like_the_tui(self):
        client = support.Client(support.binary(), support.model_path("scripted"), support.ENGINE_ARGS,
                                stderr=support.ENGINE_STDERR).start()
        self.addCleanup(client.kill)
        errors = []
        client.on("error", errors.append)
        self.addCleanup(lambda: self.assertEqual(errors, [], "the engine answered a frame of the workflow with ERROR"))
        client.set_config(**TUI_RUNTIME)  # written before the engine is ready, as the TUI does
        ready = client.wait_ready(timeout=support.TIMEOUT)
        self.assertEqual((ready.msg_id, ready.status), (0, STATUS_IDLE))
        return client

    # -- the client's steps ---------------------------------------------------------------------

    def cold_boot(self, client) -> int:
        """SET_SYSTEM; returns the slots of the idle STATUS that ends it."""
        self.assertFalse(os.path.exists(SNAPSHOT))
        msg_id = client.send_system(SYSTEM)
        seen = self.events_until(lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_IDLE,
                                 client)
        progress = [e for e in seen if isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_ENCODING]
        self.assertTrue(progress, "no encoding progress for the system prompt")
        self.assertTrue(all(0 <= e.current_tok <= e.total_tok for e in progress))
        self.assertGreater(seen[-1].active_slots, 0)  # what the TUI waits for
        return seen[-1].active_slots

    def checkpoint(self, client, stream_id: str) -> SnapshotStatus:
        os.makedirs(os.path.dirname(SNAPSHOT), exist_ok=True)
        msg_id = client.snapshot_save(SNAPSHOT, stream_id)
        saved = self.reply(msg_id, (SnapshotStatus,), client)
        self.assertIsInstance(saved, SnapshotStatus)
        self.assertEqual((saved.status, saved.stream_id), (SNAPSHOT_STATUS_SAVED, stream_id))
        self.assertTrue(os.path.isfile(SNAPSHOT))
        return saved

    def probe(self, client, prompt, candidates) -> AutonomicResult:
        result = client.probe(prompt, candidates, 1, 0.6, timeout=support.TIMEOUT)
        self.assertIn(result.winning_idx, range(len(candidates)))
        self.assertEqual(result.text, "")
        # The winner's probability in the softmax over the candidates, and the entropy in nats
        # of that softmax: at most ln(n), and for two candidates that of the winner's share.
        self.assertGreaterEqual(result.confidence, 1.0 / len(candidates) - 1e-6)
        self.assertLessEqual(result.confidence, 1.0)
        self.assertLessEqual(result.entropy, math.log(len(candidates)) + 1e-6)
        if len(candidates) == 2:
            self.assertAlmostEqual(result.entropy, support.binary_entropy(result.confidence), places=4)
        return result

    def gated_user_turn(self, client, seq: int, message: str):
        """The thinking gate, then the user turn with the flag it chose; what the turn must stream."""
        direct = picks_first(self.probe(client, GATE_PROMPT, ["0", "1"]))
        flags = INPUT_FLAG_DIRECT if direct else INPUT_FLAG_REASON
        msg_id = client._send(framing.stream_input_frame, user_turn_text(seq, message), flags, None)
        # DIRECT is no REASON: the engine closes the thought block, as for a plain turn.
        return msg_id, PLAIN_TURN if direct else REASON_TURN

    def drive(self, client, msg_id, expected) -> None:
        """Follows the turn as the TUI does, checking each TURN_COMPLETE's stretch against
        `expected`, which grows by what each of the client's decisions leads to."""
        expected = list(expected)
        done = 0
        while True:
            turn = self.collect(msg_id, client)
            self.assertLess(done, len(expected), "the turn went on past what the script writes")
            content, thought, reason = expected[done]
            self.assert_turn(turn, reason, content=content, thought=thought)
            done += 1
            if reason == STOP_END_OF_TURN:
                self.assertEqual(done, len(expected))
                return
            if reason == STOP_TOOL_CALL:
                self.assertEqual([(c.tool_name, c.args_json) for c in turn.tool_calls],
                                 [(EXPECT.tool_name, EXPECT.tool_args)])
                msg_id = client.send_tool_return(EXPECT.tool_name, {"result": "found"})
            elif isinstance(support.tokens(turn)[-1], Thought):  # a yield inside a thought
                close = picks_first(self.probe(client, ADAPTIVE_PROMPT, ["0", "1"]))
                expected[done:] = AFTER_CLOSE_THOUGHT if close else AFTER_CONTINUE_THOUGHT
                msg_id = client.send_resume(close_thought=close)
            else:
                msg_id = client.send_resume()

    def triage_backlog(self, client, seq: int, task: str) -> None:
        decision = self.probe(client, backlog_prompt(task), ["0", "1", "2"]).winning_idx
        if decision == 1:  # execute now: a nudge turn about the task, without a flag
            nudge = client.send_input(f"[Resume: backlog task not{100 + seq}]\n{task}")
            self.drive(client, nudge, PLAIN_TURN)

    # -- the workflow ---------------------------------------------------------------------------

    def test_cold_boot_turns_probes_and_snapshots_then_a_warm_boot_from_the_snapshot(self):
        client = self.start_like_the_tui()
        boot_slots = self.cold_boot(client)
        self.assertEqual(self.checkpoint(client, "stream-1").active_slots, boot_slots)

        msg_id, expected = self.gated_user_turn(client, 1, "What is in the lookup table?")
        self.drive(client, msg_id, expected)
        self.triage_backlog(client, 1, "cmd_1: ls -la finished (3 lines)")
        first = self.checkpoint(client, "stream-2")
        self.assertGreater(first.active_slots, boot_slots)
        self.assertGreater(first.clock, 0)

        # A turn that thinks (RAW, see the module's note): its yield inside the thought brings the
        # adaptive-thinking probe.
        self.drive(client, client.send_input(THOUGHT_PROMPT, reason=True, raw=True), [THOUGHT_YIELD])
        last = self.checkpoint(client, "stream-3")
        self.assertGreater(last.clock, first.clock)
        gate_before_shutdown = self.probe(client, GATE_PROMPT, ["0", "1"])
        self.assertEqual(client.shutdown(), 0)

        # Warm boot: the snapshot exists, so the TUI loads it instead of sending the system prompt.
        client = self.start_like_the_tui()
        load_id = client.snapshot_load(SNAPSHOT)
        loaded = self.reply(load_id, (SnapshotStatus,), client)
        self.assertIsInstance(loaded, SnapshotStatus)
        self.assertEqual((loaded.status, loaded.active_slots, loaded.clock, loaded.stream_id),
                         (SNAPSHOT_STATUS_LOADED, last.active_slots, last.clock, "stream-3"))
        self.assertEqual(self.wait_idle(load_id, client).active_slots, last.active_slots)
        # The restored session is the saved one: the same probe gives the same answer, bit for bit.
        gate = self.probe(client, GATE_PROMPT, ["0", "1"])
        self.assertEqual((gate.winning_idx, gate.confidence, gate.entropy),
                         (gate_before_shutdown.winning_idx, gate_before_shutdown.confidence,
                          gate_before_shutdown.entropy))
        msg_id, expected = self.gated_user_turn(client, 2, "And now?")
        self.drive(client, msg_id, expected)
        self.assertGreater(self.checkpoint(client, "stream-4").clock, last.clock)

if __name__ == "__main__":
    unittest.main()
