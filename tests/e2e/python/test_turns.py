"""End-to-end: turn logic with the scripted model: elastic yields, OP_RESUME (CONTINUE and
CLOSE_THOUGHT), tool calls and OP_TOOL_RETURN, barge-in.

Expected texts come from the scripts (e2e_support.EXPECT); clocks are checked where the
protocol fixes them: a token frame's clock is the position the token takes in the stream.
"""

import unittest

import e2e_support as support
from channel_client.protocol import STOP_ELASTIC_YIELD, STOP_END_OF_TURN, STOP_TOOL_CALL
from e2e_support import EXPECT, THOUGHT_PROMPT, EngineTestCase


def setUpModule():
    support.set_up_module("scripted")


def tearDownModule():
    support.tear_down_module()


class TurnTest(EngineTestCase):
    def yield_in_response(self):
        turn = self.collect(self.client.send_input("Hello"))
        self.assert_turn(turn, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        return turn

    def yield_in_thought(self):
        turn = self.collect(self.client.send_input(THOUGHT_PROMPT, reason=True, raw=True))
        # The RAW input ends inside a thought, so the thought script streams as THOUGHT frames; at
        # its paragraph break (24+ thought tokens) the engine yields and holds the '\n\n'.
        self.assert_turn(turn, STOP_ELASTIC_YIELD, thought=EXPECT.thought_rest)
        return turn

    def assert_starts_after(self, turn, held):
        # The held token was streamed at clock H but not fed; RESUME feeds it (or <channel|> in its
        # place) at H, so the next token frame is at H + 1.
        self.assertEqual(support.tokens(turn)[0].clock, support.tokens(held)[-1].clock + 1)

    def test_yield_resume_tool_call_and_tool_return(self):
        held = self.yield_in_response()

        resumed = self.collect(self.client.send_resume())
        self.assert_turn(resumed, STOP_TOOL_CALL, content=EXPECT.continuation)
        self.assert_starts_after(resumed, held)
        self.assertEqual([(c.tool_name, c.args_json, c.call_id) for c in resumed.tool_calls],
                         [(EXPECT.tool_name, EXPECT.tool_args, 1)])

        returned = self.collect(self.client.send_tool_return(EXPECT.tool_name, {"ok": True}))
        # The tool response is rendered ending in '<|channel>thought\n': the model answers in a
        # thought and closes the turn with <turn|>.
        self.assert_turn(returned, STOP_END_OF_TURN, thought=EXPECT.after_tool_thought)
        self.assertTrue(self.ping_answered())

    def test_thought_yield_then_resume_close_thought(self):
        held = self.yield_in_thought()
        resumed = self.collect(self.client.send_resume(close_thought=True))
        # <channel|> is fed instead of the held '\n\n': the thought is over, and <channel|> starts
        # the answer script, as content, up to its own paragraph break.
        self.assert_turn(resumed, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        self.assert_starts_after(resumed, held)

    def test_thought_yield_then_resume_continue(self):
        held = self.yield_in_thought()
        resumed = self.collect(self.client.send_resume())
        # The held '\n\n' is fed inside the open thought. Its scripted successor is the answer
        # script's continuation, and no <channel|> comes before the tool call, so the model is
        # still in the thought channel: the continuation streams as THOUGHT frames. The tool call
        # is recognised in either channel.
        self.assert_turn(resumed, STOP_TOOL_CALL, thought=EXPECT.continuation)
        self.assert_starts_after(resumed, held)
        self.assertEqual([(c.tool_name, c.args_json) for c in resumed.tool_calls],
                         [(EXPECT.tool_name, EXPECT.tool_args)])

    def test_resume_with_nothing_held_ends_the_turn(self):
        msg_id = self.client.send_resume()
        self.assert_turn(self.collect(msg_id), STOP_END_OF_TURN)
        self.wait_idle(msg_id)

    def test_barge_in_during_a_yield(self):
        first = self.yield_in_response()
        second = self.collect(self.client.send_input("Hello"))  # no RESUME: a barge-in
        self.assert_turn(second, STOP_ELASTIC_YIELD, content=EXPECT.first_paragraph)
        # Turn 1 prefilled T1 tokens (BOS + rendered turn) at clocks 0..T1-1, so its first token
        # frame has clock T1. It yielded holding '\n\n', streamed at clock H but never fed. The
        # barge-in drops the held token, feeds <turn|> at H (closing the model's turn), then the
        # rendered turn without BOS (T1 - 1 tokens) at H+1..H+T1-1: the second turn's first token
        # is at H + 1 + (T1 - 1) = H + T1, and each of its tokens is H positions after the same
        # token of turn 1.
        t1 = support.tokens(first)[0].clock
        h = support.tokens(first)[-1].clock
        self.assertEqual(support.tokens(second)[0].clock, h + t1)
        self.assertEqual([(type(t), t.token_id, t.clock + h) for t in support.tokens(first)],
                         [(type(t), t.token_id, t.clock) for t in support.tokens(second)])


if __name__ == "__main__":
    unittest.main()
