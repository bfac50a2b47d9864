"""End-to-end: OP_ABORT stops the running request, in decode and in prefill; the engine keeps
serving afterwards."""

import unittest

import e2e_support as support
from channel_client import Content, Status, Thought
from channel_client.protocol import STATUS_ENCODING, STOP_ABORTED, STOP_ELASTIC_YIELD
from e2e_support import EXPECT, EngineTestCase


def setUpModule():
    support.set_up_module("plain", "scripted")


def tearDownModule():
    support.tear_down_module()


# About 90,000 tokens: seconds of prefill even for a tiny model, in 64-token chunks.
LONG_TEXT = " ".join(f"word{i % 100}" for i in range(30000))


class AbortTest(EngineTestCase):
    starts_engine = False

    def test_abort_during_decode(self):
        # The plain model decodes up to max_tokens without stopping by itself.
        client = self.start_engine("plain", max_tokens=2000)
        msg_id = client.send_input("Tell me everything")
        client.wait_for(lambda e: isinstance(e, (Content, Thought)) and e.msg_id == msg_id, timeout=support.TIMEOUT)
        client.abort()
        turn = self.collect(msg_id, client)
        self.assertEqual(turn.reason, STOP_ABORTED)
        self.assertLess(turn.complete.total_tok, 2000)
        self.assertTrue(self.ping_answered(client))

    def test_abort_during_prefill(self):
        client = self.start_engine()
        msg_id = client.send_input(LONG_TEXT)
        # Abort only once the request runs: the engine clears the abort flag when a request
        # starts, and the first STATUS(encoding) comes after that, before the first chunk.
        client.wait_for(lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_ENCODING,
                        timeout=support.TIMEOUT)
        client.abort()
        turn = self.collect(msg_id, client)
        self.assertEqual((turn.reason, turn.complete.total_tok), (STOP_ABORTED, 0))
        self.assertEqual(support.tokens(turn), [])  # no content or thought frames
        self.wait_idle(msg_id, client)
        self.assertTrue(self.ping_answered(client))
        # The session goes on: a new turn (after the part of the long input that was prefilled).
        self.assert_turn(self.collect(client.send_input("Hello"), client), STOP_ELASTIC_YIELD,
                         content=EXPECT.first_paragraph)


if __name__ == "__main__":
    unittest.main()
