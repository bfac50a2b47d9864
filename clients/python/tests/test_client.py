"""Client process plumbing against a fake engine (tests/fixtures/fake_engine.py)."""

import subprocess
import sys
import threading
import unittest
import unittest.mock
from pathlib import Path

from channel_client import (
    STOP_ELASTIC_YIELD,
    STOP_END_OF_TURN,
    STOP_TOOL_CALL,
    Client,
    EngineExited,
    Error,
    Exit,
    MemResponse,
    Pong,
    SnapshotStatus,
    Status,
    TurnComplete,
)

FAKE_ENGINE = [sys.executable, str(Path(__file__).parent / "fixtures" / "fake_engine.py")]
TIMEOUT = 10.0


class ClientTest(unittest.TestCase):
    def start(self, *extra_args):
        client = Client(FAKE_ENGINE, "model.gguf", extra_args)
        client.start()
        self.addCleanup(client.kill)
        client.wait_ready(TIMEOUT)
        return client

    def test_command_line(self):
        client = Client("/opt/channel", "m.gguf", ["--threads", "2"])
        self.assertEqual(client.argv, ["/opt/channel", "--model", "m.gguf", "--serve", "--threads", "2"])

    def test_ready_then_turn(self):
        client = self.start()
        msg_id = client.send_input("hello sea")
        turn = client.collect_turn(msg_id, TIMEOUT)
        self.assertEqual(turn.content, "You said: hello sea")
        self.assertEqual(turn.thought, "")
        self.assertEqual(turn.reason, STOP_END_OF_TURN)
        self.assertEqual(turn.complete, TurnComplete(msg_id, 4, 5, 200.0, STOP_END_OF_TURN))
        self.assertTrue(all(e.msg_id == msg_id for e in turn.events))
        # STATUS(idle) follows TURN_COMPLETE and stays queued for the caller.
        status = client.next_event(TIMEOUT)
        self.assertIsInstance(status, Status)
        self.assertEqual((status.msg_id, status.status, status.current_tok), (msg_id, 0, 4))

    def test_reason_streams_thoughts_first(self):
        client = self.start()
        turn = client.collect_turn(client.send_input("hi", reason=True), TIMEOUT)
        self.assertEqual(turn.thought, "Let me think.")
        self.assertEqual(turn.content, "You said: hi")
        self.assertEqual(type(turn.events[0]).__name__, "Thought")

    def test_token_input(self):
        client = self.start()
        turn = client.collect_turn(client.send_input(tokens=[2, 651]), TIMEOUT)
        self.assertEqual(turn.content, "ids: 2 651")

    def test_elastic_yield_and_resume(self):
        client = self.start()
        turn = client.collect_turn(client.send_input("yield"), TIMEOUT)
        self.assertEqual(turn.reason, STOP_ELASTIC_YIELD)
        resumed = client.collect_turn(client.send_resume(), TIMEOUT)
        self.assertEqual((resumed.content, resumed.reason), (" resumed", STOP_END_OF_TURN))

    def test_tool_call_and_return(self):
        client = self.start()
        turn = client.collect_turn(client.send_input("tool"), TIMEOUT)
        self.assertEqual(turn.reason, STOP_TOOL_CALL)
        (call,) = turn.tool_calls
        self.assertEqual((call.call_id, call.tool_name, call.args_json), (1, "search", '{query:<|"|>sea<|"|>}'))
        result = client.collect_turn(client.send_tool_return("search", {"hits": 0}), TIMEOUT)
        self.assertEqual(result.content, 'result: {"hits": 0}')

    def test_callbacks_run_alongside_the_queue(self):
        client = Client(FAKE_ENGINE, "model.gguf")
        seen = []
        client.on("content", lambda token: seen.append(token.text))
        client.on("status", lambda status: seen.append(f"status {status.msg_id}"))
        client.start()
        self.addCleanup(client.kill)
        client.wait_ready(TIMEOUT)
        client.collect_turn(client.send_input("a"), TIMEOUT)
        client.wait_for(lambda e: isinstance(e, Status) and e.msg_id != 0, TIMEOUT)
        self.assertEqual(seen, ["status 0", "You", " said:", " a", "status 1"])

    def test_unknown_event_name_is_rejected(self):
        with self.assertRaises(ValueError):
            Client(FAKE_ENGINE, "model.gguf").on("turnComplete", print)

    def test_failing_callback_does_not_stop_the_reader(self):
        client = Client(FAKE_ENGINE, "model.gguf", stderr=subprocess.DEVNULL)
        client.on("status", lambda status: 1 / 0)
        client.start()
        self.addCleanup(client.kill)
        with unittest.mock.patch("sys.stderr"):
            client.wait_ready(TIMEOUT)
            msg_id = client.ping()
            self.assertEqual(client.wait_for(lambda e: isinstance(e, Pong), TIMEOUT), Pong(msg_id))

    def test_probe_blocks_for_its_result(self):
        client = self.start()
        result = client.probe("Is it raining?", ["no", "yes"], timeout=TIMEOUT)
        self.assertEqual((result.winning_idx, result.confidence, result.entropy, result.cost_ms), (1, 0.75, 0.5, 1.5))
        # Also delivered as an event.
        self.assertEqual(client.next_event(TIMEOUT), result)

    def test_concurrent_probes_are_matched_by_msg_id(self):
        client = self.start()
        results = {}

        def run(count):
            results[count] = client.probe("p", [str(i) for i in range(count)], timeout=TIMEOUT)

        threads = [threading.Thread(target=run, args=(count,)) for count in (2, 3, 4, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual({count: r.winning_idx for count, r in results.items()}, {2: 1, 3: 2, 4: 3, 5: 4})

    def test_mem_query_response_parsed(self):
        client = self.start()
        msg_id = client.mem_query("sea", top_k=2)
        self.assertEqual(
            client.wait_for(lambda e: isinstance(e, MemResponse), TIMEOUT), MemResponse(msg_id, 2, 0, 0, 0, (1000, 1001))
        )

    def test_snapshot_save_status(self):
        client = self.start()
        msg_id = client.snapshot_save("s.bin", "entry-1")
        self.assertEqual(
            client.wait_for(lambda e: isinstance(e, SnapshotStatus), TIMEOUT), SnapshotStatus(msg_id, 0, 7, 42, "entry-1")
        )

    def test_engine_error_then_exit(self):
        client = self.start()
        msg_id = client.snapshot_load("missing")
        error = client.wait_for(lambda e: isinstance(e, Error), TIMEOUT)
        self.assertEqual(error, Error(msg_id, "Failed to load snapshot", local=False))
        self.assertEqual(client.next_event(TIMEOUT), Exit(1))
        with self.assertRaises(EngineExited):
            client.next_event(TIMEOUT)
        with self.assertRaises(EngineExited):
            client.ping()

    def test_exit_during_turn_raises(self):
        client = self.start()
        client.send_input("crash")
        with self.assertRaises(EngineExited) as raised:
            client.collect_turn(timeout=TIMEOUT)
        self.assertEqual(raised.exception.returncode, 3)

    def test_pending_probe_fails_when_engine_exits(self):
        client = self.start()
        client.send_input("crash")
        with self.assertRaises(EngineExited):
            client.probe("p", ["a"], timeout=TIMEOUT)

    def test_garbage_on_stdout_is_reported_and_skipped(self):
        client = Client(FAKE_ENGINE, "model.gguf", ["--garbage"])
        client.start()
        self.addCleanup(client.kill)
        first = client.next_event(TIMEOUT)
        self.assertEqual(first, Error(0, "skipped 15 bytes of non-frame data on stdout", local=True))
        client.wait_ready(TIMEOUT)
        turn = client.collect_turn(client.send_input("garbage"), TIMEOUT)
        self.assertEqual(turn.content, "You said: garbage")
        self.assertTrue(any(isinstance(e, Error) and e.local for e in turn.events))

    def test_set_config_merges_with_previous_values(self):
        client = self.start()
        client.set_config(temp=0.5)
        client.set_config(max_tokens=256)
        self.assertEqual((client.config.temp, client.config.max_tokens, client.config.top_p), (0.5, 256, 0.95))
        with self.assertRaises(TypeError):
            client.set_config(temperature=0.5)

    def test_shutdown_returns_exit_code(self):
        client = self.start()
        client.send_system({"instructions": "Be brief."})
        self.assertIsInstance(client.wait_for(lambda e: isinstance(e, Status), TIMEOUT), Status)
        self.assertEqual(client.shutdown(TIMEOUT), 0)
        events = []
        while not client.events.empty():
            events.append(client.events.get())
        self.assertEqual(events[-1], Exit(0))

    def test_context_manager_shuts_down(self):
        with Client(FAKE_ENGINE, "model.gguf") as client:
            client.wait_ready(TIMEOUT)
        self.assertEqual(client.returncode, 0)

    def test_msg_ids_skip_zero_when_wrapping(self):
        client = Client(FAKE_ENGINE, "model.gguf")
        client._next_id = 0xFFFF
        self.assertEqual([client._allocate_id() for _ in range(3)], [0xFFFF, 1, 2])


if __name__ == "__main__":
    unittest.main()
