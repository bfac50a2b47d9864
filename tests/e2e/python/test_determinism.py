"""End-to-end: greedy decoding is reproducible across engines, and probes leave no trace: a
session with probes between its requests streams exactly the same frames as one without."""

import unittest

import e2e_support as support
from e2e_support import EXPECT, THOUGHT_PROMPT, EngineTestCase


def setUpModule():
    support.set_up_module("plain", "scripted")


def tearDownModule():
    support.tear_down_module()


# Requests through every turn state the probes frame differently: between turns, a yield in the
# response, after a tool call, a yield inside a thought.
STEPS = (
    lambda c: c.send_input("Hello"),
    lambda c: c.send_resume(),
    lambda c: c.send_tool_return(EXPECT.tool_name, {"ok": True}),
    lambda c: c.send_input(THOUGHT_PROMPT, reason=True, raw=True),
    lambda c: c.send_resume(close_thought=True),
)


class DeterminismTest(EngineTestCase):
    starts_engine = False  # each test starts the engines it compares

    def test_same_greedy_turn_on_two_engines_gives_the_same_frames(self):
        # The plain model: a random-weight continuation, not a script.
        first, second = (self.start_engine("plain", max_tokens=12) for _ in range(2))
        turns = [self.collect(c.send_input("Say something"), c) for c in (first, second)]
        self.assertTrue(support.tokens(turns[0]))
        self.assertEqual(support.signature(turns[0]), support.signature(turns[1]))

    def run_steps(self, client, probe):
        signatures = []
        for step in STEPS:
            if probe:
                self.assertIn(client.probe("Answer now?", ["0", "1"], timeout=support.TIMEOUT).winning_idx, (0, 1))
                client.probe("Say something", [], max_decode_tokens=4, timeout=support.TIMEOUT)
            signatures.append(support.signature(self.collect(step(client), client)))
        return signatures

    def test_probes_leave_the_session_unchanged(self):
        plain = self.run_steps(self.start_engine(), probe=False)
        probed = self.run_steps(self.start_engine(), probe=True)
        self.assertEqual(probed, plain)  # same token ids at the same clocks, same stops


if __name__ == "__main__":
    unittest.main()
