// EOF on stdin (the host is gone, no OP_SHUTDOWN): the engine aborts the running request, drops
// the queued ones and exits with code 0, promptly (docs/protocol.md, "Server behaviour").

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { STOP_ABORTED } from '../../../clients/node/src/protocol.js';
import { GREEDY, SUITE, engineSuite, startLongDecode } from './support.mjs';

const PROMPT_EXIT_MS = 1000;

/** Closes the engine's stdin; resolves with its exit info and how long the exit took. */
async function closeAndTime(client) {
  const start = performance.now();
  const exitInfo = await client.closeInput();
  return { exitInfo, ms: performance.now() - start };
}

describe('EOF on stdin', SUITE, () => {
  const suite = engineSuite('plain');

  test('idle: the engine exits with code 0 within 1 s', async () => {
    const client = await suite.start({ config: GREEDY });
    const { exitInfo, ms } = await closeAndTime(client);
    assert.deepEqual(exitInfo, { code: 0, signal: null });
    assert.ok(ms < PROMPT_EXIT_MS, `exit took ${ms.toFixed(0)} ms`);
  });

  test('during a decode: the turn is aborted, a queued ping dropped, exit code 0 within 1 s', async () => {
    const { client, msgId } = await startLongDecode(suite);
    const events = [];
    const record = (event) => (data) => events.push([event, data.msgId, data.reason]);
    for (const event of ['turnComplete', 'pong']) client.on(event, record(event));
    const pingId = client.ping(); // queued behind the running turn
    const { exitInfo, ms } = await closeAndTime(client);
    assert.deepEqual(exitInfo, { code: 0, signal: null });
    assert.ok(ms < PROMPT_EXIT_MS, `exit took ${ms.toFixed(0)} ms`);
    assert.deepEqual(events, [['turnComplete', msgId, STOP_ABORTED]], `no pong for ${pingId}`);
  });
});
