"""End-to-end: how the engine ends: OP_SHUTDOWN (queued requests served first), EOF on stdin
(exit at once, even in the middle of a request) and a host that closes the engine's output."""

import subprocess
import time
import unittest

import e2e_support as support
from channel_client import Exit, MemResponse, Pong, Status, TurnComplete, framing
from channel_client.protocol import STATUS_ENCODING, STOP_ELASTIC_YIELD
from e2e_support import EngineTestCase


def setUpModule():
    support.set_up_module("scripted")


def tearDownModule():
    support.tear_down_module()


class LifecycleTest(EngineTestCase):
    def events_until_exit(self):
        return self.events_until(lambda e: isinstance(e, Exit))

    def assert_exits_within_a_second_with_code_0(self):
        start = time.monotonic()
        self.client._proc.wait(timeout=5)
        self.assertEqual(self.client._proc.returncode, 0)
        self.assertLess(time.monotonic() - start, 1.0 * support.TIME_SCALE)

    def test_shutdown_serves_the_requests_queued_before_it_then_exits_0(self):
        ping_id = self.client.ping()
        turn_id = self.client.send_input("Hello")
        query_id = self.client.mem_query("anything")
        # SHUTDOWN and a PING after it in one write: the engine reads both while the turn runs.
        late_ping_id = support.RAW_MSG_ID
        self.client._write(framing.shutdown_frame(support.RAW_MSG_ID + 1) + framing.ping_frame(late_ping_id))
        events = self.events_until_exit()
        self.assertIn(Pong(ping_id), events)
        self.assertEqual([e.reason for e in events if isinstance(e, TurnComplete) and e.msg_id == turn_id],
                         [STOP_ELASTIC_YIELD])
        self.assertTrue([e for e in events if isinstance(e, MemResponse) and e.msg_id == query_id])
        self.assertNotIn(Pong(late_ping_id), events)  # read after SHUTDOWN: never served
        self.assertEqual(events[-1], Exit(0))

    def test_eof_exits_cleanly_within_a_second(self):
        self.client._close_stdin()
        self.assert_exits_within_a_second_with_code_0()

    def test_eof_during_a_request_aborts_it_and_exits_within_a_second(self):
        msg_id = self.client.send_input(" ".join(["word"] * 30000))  # seconds of prefill
        self.client.wait_for(lambda e: isinstance(e, Status) and e.msg_id == msg_id and e.status == STATUS_ENCODING,
                             timeout=support.TIMEOUT)
        self.client._close_stdin()
        self.assert_exits_within_a_second_with_code_0()

    def test_a_host_that_closes_the_output_ends_the_engine_with_code_0(self):
        # The next frame the engine writes fails with EPIPE (not SIGPIPE, which would kill it
        # mid-request with code -13): the request stops, the input is left, the engine exits 0.
        self.client.kill()
        proc = subprocess.Popen([support.binary(), "--model", support.model_path(self.model), "--serve",
                                 *support.ENGINE_ARGS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=support.ENGINE_STDERR)
        self.addCleanup(proc.kill)
        self.assertEqual(len(proc.stdout.read(16 + 20)), 16 + 20)  # the ready STATUS: it is serving
        proc.stdout.close()
        proc.stdin.write(framing.ping_frame(1))
        proc.stdin.flush()
        self.assertEqual(proc.wait(timeout=5 * support.TIME_SCALE), 0)


if __name__ == "__main__":
    unittest.main()
