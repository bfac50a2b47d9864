#!/usr/bin/env python3
"""GreedyReference.judge: when a greedy continuation counts as llama.cpp's (run by CTest)."""
import unittest

from parity_common import GreedyReference

# llama.cpp chose 5, 6, 7, 8; the runners-up were 50, 60, 70, 80; step 2 was a near tie.
REFERENCE = GreedyReference(ids=[5, 6, 7, 8], runners_up=[50, 60, 70, 80], margins=[0.3, 0.2, 3e-4, 0.4])
BOUND = 5e-3


class GreedyReferenceJudge(unittest.TestCase):
    def test_identical_continuation_passes(self):
        self.assertEqual(REFERENCE.judge([5, 6, 7, 8], BOUND), (4, True, ""))

    def test_leaving_at_a_near_tie_for_the_runner_up_passes_and_ignores_the_rest(self):
        matched, passed, note = REFERENCE.judge([5, 6, 70, 1], BOUND)
        self.assertEqual((matched, passed), (2, True))
        self.assertIn("tie at 2", note)

    def test_leaving_at_a_clear_step_fails(self):
        self.assertEqual(REFERENCE.judge([5, 60, 7, 8], BOUND), (1, False, ""))

    def test_leaving_at_a_near_tie_for_another_token_fails(self):
        self.assertEqual(REFERENCE.judge([5, 6, 71, 8], BOUND), (2, False, ""))

    def test_a_near_tie_above_a_tighter_bound_fails(self):
        self.assertEqual(REFERENCE.judge([5, 6, 70, 8], 1e-4), (2, False, ""))

    def test_a_shorter_continuation_fails(self):
        self.assertEqual(REFERENCE.judge([5, 6], BOUND), (2, False, ""))


if __name__ == "__main__":
    unittest.main()
