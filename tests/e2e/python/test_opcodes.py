"""End-to-end: each inbound opcode against the real binary, with its expected reply.

Uses the scripted model, so replies have exact expected texts (e2e_support.EXPECT). Opcodes
covered in other modules: OP_ABORT (test_abort), OP_TOOL_RETURN and OP_RESUME (test_turns),
OP_SNAPSHOT_SAVE / OP_SNAPSHOT_LOAD (test_snapshot), OP_SHUTDOWN (test_lifecycle).
"""

import math
import os
import struct
import time
import unittest

import e2e_support as support
from channel_client import AutonomicResult, Error, MemResponse, Pong, Status, Thought, TurnComplete, framing
from channel_client.protocol import (
    MEM_STATUS_NO_MATCH,
    MEM_STATUS_OK,
    OP_MEM_QUERY,
    OP_SET_CONFIG,
    STATUS_ENCODING,
    STATUS_IDLE,
    STOP_ELASTIC_YIELD,
    STOP_END_OF_TURN,
    STOP_MAX_TOKENS,
)
from e2e_support import EXPECT, EngineTestCase


def setUpModule():
    support.set_up_module("scripted")


def tearDownModule():
    support.tear_down_module()


class StreamInputTest(EngineTestCase):
    def test_text_mode_renders_a_user_turn(self):
        msg_id = self.client.send_input("Hello there")
        turn = self.collect(msg_id)
        frames = support.tokens(turn)
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        statuses = [e for e in turn.events if isinstance(e, Status) and e.msg_id == msg_id]
        # STATUS(encoding) opens the request; the prompt (BOS + rendered turn) is prefilled from
        # clock 0, so the first generated token sits at the clock after it.
        self.assertEqual(statuses[0].status, STATUS_ENCODING)
        self.assertEqual(frames[0].clock, statuses[0].total_tok)
        self.assertEqual([t.clock for t in frames], list(range(frames[0].clock, frames[0].clock + len(frames))))
        self.assertEqual(self.wait_idle(msg_id).status, STATUS_IDLE)

    def test_token_mode_feeds_the_ids_verbatim(self):
        # The ids of the answer's first two words, as the engine streamed them.
        seed = support.tokens(self.collect(self.client.send_input("Hello")))[:2]
        seed_text = "".join(t.text for t in seed)
        self.assertEqual(seed_text, support.first_words(EXPECT.first_paragraph, 2))
        fresh = self.start_engine()
        turn = self.collect(fresh.send_input(tokens=[t.token_id for t in seed]), fresh)
        # No template and no BOS: the two ids sit at clocks 0 and 1, the model continues the
        # answer script after them.
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph[len(seed_text):])
        self.assertEqual(support.tokens(turn)[0].clock, 2)

    def test_raw_flag_sends_the_text_without_the_turn_template(self):
        prefix = support.first_words(EXPECT.first_paragraph, 2)
        turn = self.collect(self.client.send_input(prefix, raw=True))
        # Verbatim: BOS (clock 0) and the two words (clocks 1 and 2), no user turn around them.
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph[len(prefix):])
        self.assertEqual(support.tokens(turn)[0].clock, 3)

    def test_reason_flag_leaves_the_thought_block_to_the_model(self):
        turn = self.collect(self.client.send_input("Hello there", reason=True))
        # With INPUT_FLAG_REASON the rendered turn ends at '<|turn>model\n', without the empty
        # thought block whose <channel|> would start the answer script. The scripted successor of
        # that '\n' is the after_tool script's ('thought\nLooked it up<turn|>'): the model writes
        # it and ends the turn. It opened no channel, so it is content.
        self.assert_turn(turn, STOP_END_OF_TURN, content=EXPECT.after_tool_thought)


class ConfigTest(EngineTestCase):
    def test_max_tokens_stops_the_burst_and_a_partial_payload_is_accepted(self):
        self.client.set_config(max_tokens=3)
        turn = self.collect(self.client.send_input("Hello"))
        self.assert_turn(turn, STOP_MAX_TOKENS, content=support.first_words(EXPECT.first_paragraph, 3))

        # 20 bytes: thinking_budget, temp, top_p, quiescence threshold, max_tokens; the rest keep
        # their values. Applied without a reply: the next turn (a barge-in) stops after 5 tokens.
        config_id = support.RAW_MSG_ID
        partial = struct.pack("<IfffI", 512, 0.0, 0.95, 0.001, 5)
        self.client._write(framing.encode_frame(OP_SET_CONFIG, config_id, partial))
        msg_id = self.client.send_input("Hello")
        turn = self.collect(msg_id)
        self.assert_turn(turn, STOP_MAX_TOKENS, content=support.first_words(EXPECT.first_paragraph, 5))
        self.assertFalse([e for e in turn.events if getattr(e, "msg_id", None) == config_id])
        self.assertTrue(self.ping_answered())


class MemoryTest(EngineTestCase):
    def assert_no_memory(self, reply, msg_id):
        self.assertIsInstance(reply, MemResponse)
        self.assertEqual((reply.msg_id, reply.count, reply.status, reply.timestamps),
                         (msg_id, 0, MEM_STATUS_NO_MATCH, ()))

    def test_mem_query_after_a_turn_recalls_its_episode(self):
        # The burst's decoded tokens are committed when it ends; MEM_QUERY then recalls them
        # whole into the recall slots: status OK, a timestamp per result (ms since the epoch, of
        # the episode's first token), the injected tokens in total_tokens.
        before_ms = time.time() * 1000
        turn = self.collect(self.client.send_input("Hello there"))
        decoded = len(support.tokens(turn))
        self.wait_idle(turn.msg_id)
        msg_id = self.client.mem_query("hello", top_k=3)
        reply = self.reply(msg_id, (MemResponse,))
        self.assertEqual((reply.msg_id, reply.status, reply.count), (msg_id, MEM_STATUS_OK, len(reply.timestamps)))
        self.assertGreaterEqual(reply.count, 1)
        self.assertTrue(1 <= reply.total_tokens <= min(decoded, 128), (reply.total_tokens, decoded))
        for ms in reply.timestamps:
            self.assertTrue(before_ms - 1000 <= ms <= time.time() * 1000 + 1000, (ms, before_ms))
        # The reference client's layout reads the same store.
        client_layout = struct.pack("<BB22x", 0, 3) + b"hello"
        self.client._write(framing.encode_frame(OP_MEM_QUERY, support.RAW_MSG_ID, client_layout))
        self.assertEqual(self.reply(support.RAW_MSG_ID, (MemResponse,)).status, MEM_STATUS_OK)

    def test_episodes_stored_with_memory_are_recalled_by_the_next_engine(self):
        # --memory PATH: the episode a turn commits is in the store file when the turn is over, so
        # an engine killed with SIGKILL right after loses nothing and the next one recalls it.
        path = "e2e_memory_test.mem"
        self.addCleanup(lambda: os.path.exists(path) and os.remove(path))
        first = self.start_engine(extra_args=["--memory", path])
        turn = self.collect(first.send_input("Hello there"), first)
        self.wait_idle(turn.msg_id, first)
        first.kill()
        second = self.start_engine(extra_args=["--memory", path])
        msg_id = second.mem_query("hello", top_k=3)
        reply = self.reply(msg_id, (MemResponse,), second)
        self.assertEqual((reply.status, reply.count), (MEM_STATUS_OK, len(reply.timestamps)))
        self.assertGreaterEqual(reply.count, 1)

    def test_mem_query_answers_no_memory(self):
        msg_id = self.client.mem_query("what did we say", top_k=3)
        self.assert_no_memory(self.reply(msg_id, (MemResponse,)), msg_id)
        # The reference client's layout (mode, top_k, 22 zero bytes, query) gets the same answer.
        client_layout = struct.pack("<BB22x", 0, 3) + b"what did we say"
        self.client._write(framing.encode_frame(OP_MEM_QUERY, support.RAW_MSG_ID, client_layout))
        self.assert_no_memory(self.reply(support.RAW_MSG_ID, (MemResponse,)), support.RAW_MSG_ID)

    def test_mem_commit_has_no_reply(self):
        commit_id = self.client.mem_commit()
        ping_id = self.client.ping()
        first = self.client.wait_for(lambda e: getattr(e, "msg_id", None) in (commit_id, ping_id),
                                     timeout=support.TIMEOUT)
        self.assertEqual(first, Pong(ping_id))


class RecallAfterRestartTest(EngineTestCase):
    """Issue 10's test (3), through the binary: an episode stored with --memory is recalled by the
    next engine before its first prefill, and changes what the model writes (the ``recall``
    model: only a recalled episode can make ``answer`` the first token)."""

    model = "recall"
    config = {"temp": 0.0, "max_tokens": 4}
    starts_engine = False

    def pieces(self, client):
        turn = self.collect(client.send_input("Hi"), client)
        self.wait_idle(turn.msg_id, client)
        return [frame.piece for frame in support.tokens(turn)]

    def test_a_stored_episode_is_recalled_after_a_restart_and_changes_the_answer(self):
        path = "e2e_recall_test.mem"
        self.addCleanup(lambda: os.path.exists(path) and os.remove(path))
        first = self.start_engine(extra_args=["--memory", path])
        # The script's memory token, then the answer: memory is in the stream now.
        self.assertEqual(self.pieces(first), [support.RECALL.memory] + [support.RECALL.answer] * 3)
        first.kill()  # SIGKILL: the episode was on disk when the turn ended

        restarted = self.start_engine(extra_args=["--memory", path])
        self.assertEqual(self.pieces(restarted)[0], support.RECALL.answer)
        without = self.start_engine(extra_args=["--no-memory"])
        self.assertEqual(self.pieces(without)[0], support.RECALL.memory)


class SystemTest(EngineTestCase):
    def test_set_system_json_is_prefilled_then_idle(self):
        system = {
            "instructions": "Answer in numbers.",
            "tools": [{"name": EXPECT.tool_name, "description": "Looks a thing up",
                       "parameters": {"type": "object", "properties": {}}}],
        }
        msg_id = self.client.send_system(system)
        events = self.events_until(lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_IDLE)
        mine = [e for e in events if getattr(e, "msg_id", None) == msg_id]
        self.assertTrue(all(isinstance(e, Status) for e in mine), mine)
        self.assertEqual(mine[0].status, STATUS_ENCODING)
        system_tokens = mine[0].total_tok
        self.assertGreater(system_tokens, 0)

        # The system turn stays in the stream: the user turn (no BOS now) is prefilled after it.
        turn_id = self.client.send_input("Hello")
        turn = self.collect(turn_id)
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        encoding = next(e for e in turn.events if isinstance(e, Status) and e.msg_id == turn_id)
        self.assertEqual(support.tokens(turn)[0].clock, system_tokens + encoding.total_tok)


class PingTest(EngineTestCase):
    def test_each_ping_gets_its_pong_in_order(self):
        ids = [self.client.ping() for _ in range(5)]
        pongs = [self.client.wait_for(lambda e: isinstance(e, (Pong, Error)), timeout=support.TIMEOUT) for _ in ids]
        self.assertEqual(pongs, [Pong(i) for i in ids])


class ProbeTest(EngineTestCase):
    def probe_events(self, *args, **kwargs):
        msg_id = self.client.send_probe_autonomic(*args, **kwargs)
        events = self.events_until(lambda e: isinstance(e, (AutonomicResult, Error)) and e.msg_id == msg_id)
        mine = [e for e in events if getattr(e, "msg_id", None) == msg_id]
        self.assertIsInstance(mine[-1], AutonomicResult)
        # The probe's prompt is encoded first; it never streams tokens or ends a turn.
        self.assertEqual(mine[0].status, STATUS_ENCODING)
        self.assertFalse([e for e in mine if isinstance(e, (TurnComplete, Thought))])
        return mine[-1]

    def test_discrete_probe_picks_a_candidate(self):
        result = self.probe_events("Answer now?", ["0", "1"], max_decode_tokens=1)
        self.assertIn(result.winning_idx, (0, 1))
        # Softmax over two candidates: the winner's probability, and its entropy in nats.
        self.assertGreaterEqual(result.confidence, 0.5)
        self.assertLessEqual(result.confidence, 1.0)
        self.assertAlmostEqual(result.entropy, support.binary_entropy(result.confidence), places=4)
        self.assertLessEqual(result.entropy, math.log(2) + 1e-6)
        self.assertEqual(result.text, "")
        self.assertTrue(self.ping_answered())

    def test_generative_probe_decodes_text(self):
        # Between turns the probe is framed as a user turn ending with the empty thought block, so
        # the model starts the answer script; 4 tokens are decoded.
        result = self.probe_events("Say something", [], max_decode_tokens=4)
        self.assertEqual((result.winning_idx, result.confidence, result.entropy), (0, 0.0, 0.0))
        # The text is built from raw vocabulary pieces (spaces as U+2581), as the token frames are.
        self.assertEqual(result.text.replace("\u2581", " "), support.first_words(EXPECT.first_paragraph, 4))
        self.assertTrue(self.ping_answered())

    def test_probe_longer_than_the_scratch_slots_is_answered(self):
        # The original client's backlog-triage probe carries a preview of the event; past ~62 words
        # it needs more than the 128 scratch slots, and a refusal would stall that client (its
        # probe() has no error path).
        preview = " ".join(["event"] * 150)  # with the framing, about 180 tokens
        prompt = f"Backlog event:\n{preview}\n0: satisfied\n1: execute now\n2: defer\nDecision:"
        result = self.probe_events(prompt, ["0", "1", "2"], max_decode_tokens=1)
        self.assertIn(result.winning_idx, (0, 1, 2))
        self.assertTrue(self.ping_answered())

    def test_probe_of_more_than_2048_tokens_is_refused_with_its_count(self):
        # Verbatim (it has <|turn>, so nothing is added): <|turn> and 2100 times " a", a token each.
        msg_id = self.client.send_probe_autonomic("<|turn>" + " a" * 2100, ["0", "1"], max_decode_tokens=1)
        error = self.reply(msg_id, (AutonomicResult,))
        self.assertIsInstance(error, Error)
        self.assertIn("the probe's prompt is 2101 tokens, more than the 2048", error.message)
        self.assertTrue(self.ping_answered())


if __name__ == "__main__":
    unittest.main()
