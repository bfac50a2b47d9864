// OP_ABORT of a running request: during prefill and during decode. (ABORT while idle is in
// opcodes.test.mjs.) The abort is handled by the engine's reader thread at once; the running
// request stops between prefill chunks or before the next generated token.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { STATUS_ENCODING, STATUS_IDLE, STOP_ABORTED } from '../../../clients/node/src/protocol.js';
import { GREEDY, SUITE, TIMEOUT_MS, collectReply, engineSuite, pingThrough, startLongDecode } from './support.mjs';

/** ~30,000 words: a prefill of hundreds of chunks. */
const LONG_TEXT = Array.from({ length: 30000 }, (_, i) => ['river', 'stone', 'light', 'seven', 'across'][i % 5]).join(' ');

describe('abort', SUITE, () => {
  const suite = engineSuite('plain');

  test('ABORT during prefill: TURN_COMPLETE(aborted) with 0 tokens, no token frames, then idle', async () => {
    const client = await suite.start({ config: GREEDY });
    const msgId = client.sendInput(LONG_TEXT);
    const reply = collectReply(client, msgId);
    // Not before the request runs: the engine clears the abort flag when a request starts.
    await client.waitFor(
      ({ event, data }) => event === 'status' && data.msgId === msgId && data.status === STATUS_ENCODING,
      { timeoutMs: TIMEOUT_MS },
    );
    client.sendAbort();
    const events = await reply;
    const names = events.map((e) => e.event);
    assert.deepEqual(names.slice(-2), ['turnComplete', 'status'], names.join());
    assert.ok(names.slice(0, -2).every((name) => name === 'status'), 'no token frames');
    const [complete, idle] = events.slice(-2).map((e) => e.data);
    assert.deepEqual([complete.reason, complete.totalTok, idle.status], [STOP_ABORTED, 0, STATUS_IDLE]);
    // The prefill stopped short of the prompt.
    const encoding = events.at(-3).data;
    assert.equal(encoding.status, STATUS_ENCODING);
    assert.ok(encoding.currentTok < encoding.totalTok, `prefill ran to ${encoding.currentTok} of ${encoding.totalTok}`);
    await pingThrough(client);
  });

  test('ABORT during decode: TURN_COMPLETE(aborted) long before max tokens', async () => {
    const { client, turn } = await startLongDecode(suite);
    client.sendAbort();
    const aborted = await turn;
    assert.equal(aborted.reason, STOP_ABORTED);
    assert.ok(aborted.complete.totalTok >= 1 && aborted.complete.totalTok < 1000, String(aborted.complete.totalTok));
    await pingThrough(client);
  });
});
