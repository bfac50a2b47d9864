"""`python3 -m channel_client` against the fake engine (tests/fixtures/fake_engine.py)."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
FAKE_ENGINE = PACKAGE_ROOT / "tests" / "fixtures" / "fake_engine.py"


class MainTest(unittest.TestCase):
    def setUp(self):
        # --binary takes one executable, so wrap the interpreter + fixture in a script.
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.binary = Path(directory.name) / "engine"
        self.binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_ENGINE}" "$@"\n')
        self.binary.chmod(0o755)

    def run_main(self, *args):
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
        command = [sys.executable, "-m", "channel_client", "--binary", str(self.binary), "--model", "m", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=30)

    def test_streams_the_whole_reply_across_elastic_yields(self):
        result = self.run_main("yield")
        self.assertEqual((result.returncode, result.stdout), (0, "You said: yield resumed\n"))

    def test_thoughts_go_to_stderr(self):
        result = self.run_main("--reason", "hi")
        self.assertEqual((result.returncode, result.stdout), (0, "You said: hi\n"))
        self.assertIn("Let me think.", result.stderr)

    def test_tool_call_is_a_failure(self):
        result = self.run_main("tool")
        self.assertEqual(result.returncode, 1)
        self.assertIn("[tool call search", result.stderr)

    def test_engine_exit_is_a_failure(self):
        result = self.run_main("crash")
        self.assertEqual(result.returncode, 1)
        self.assertIn("engine exited with code 3", result.stderr)


if __name__ == "__main__":
    unittest.main()
