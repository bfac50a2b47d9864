// OP_PROBE_AUTONOMIC leaves no trace: everything it feeds is rolled back (stream, turn state,
// last logits). Two engines on the same random model run the same greedy turns; one of them
// probes before each turn: at clock 0 (framed as a turn of its own) and after a turn that ended
// at max tokens (the model's turn still open: fed verbatim). Every token frame (id and clock)
// must be the same in both.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { GREEDY, SUITE, TIMEOUT_MS, engineSuite, tokenFrames, turnOf } from './support.mjs';

const TURNS = ['Hello there, how are you?', 'Tell me more about it.'];

/** Token frames of each turn; `first(client)` runs before each turn. */
async function frames(client, first = async () => {}) {
  const result = [];
  for (const text of TURNS) {
    await first(client);
    result.push(tokenFrames(await turnOf(client, client.sendInput(text))));
  }
  return result;
}

describe('probe purity', SUITE, () => {
  const suite = engineSuite('plain');

  test('greedy turns after probes equal the same turns without them', async () => {
    const [plain, probed] = await Promise.all([suite.start({ config: GREEDY }), suite.start({ config: GREEDY })]);
    const probes = async (client) => {
      // Discrete, generative, and one with its own turn markers (fed verbatim), at once.
      const results = await Promise.all([
        client.probe('Is the answer yes?', ['yes', 'no', 'maybe'], 1, 0.6, { timeoutMs: TIMEOUT_MS }),
        client.probe('Say one word:', [], 8, 0.6, { timeoutMs: TIMEOUT_MS }),
        client.probe('<|turn>user\nAnything?<turn|>\n<|turn>model\n', ['0', '1'], 1, 0.6, { timeoutMs: TIMEOUT_MS }),
      ]);
      assert.equal(results.length, 3);
    };
    const [expected, actual] = await Promise.all([frames(plain), frames(probed, probes)]);
    assert.ok(expected.every((turn) => turn.length > 0), 'every turn streams tokens');
    assert.deepEqual(actual, expected);
    assert.deepEqual([plain.errors, probed.errors], [[], []]);
  });
});
