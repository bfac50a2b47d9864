// Client process plumbing against a fake engine (test/fixtures/fake-engine.js).
// The Python client runs the same scenarios in clients/python/tests/test_client.py.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, test } from 'node:test';

import { Client, EngineExitedError } from '../src/client.js';
import { pingFrame } from '../src/framing.js';
import { STOP_ELASTIC_YIELD, STOP_END_OF_TURN, STOP_TOOL_CALL } from '../src/protocol.js';

const FAKE_ENGINE = [process.execPath, fileURLToPath(new URL('./fixtures/fake-engine.js', import.meta.url))];
const timeoutMs = 10000;

const clients = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.kill()));
});

function makeClient(extraArgs = []) {
  const client = new Client({ binaryPath: FAKE_ENGINE, modelPath: 'model.gguf', extraArgs });
  client.on('error', () => {}); // asserted where expected; without a listener 'error' throws
  clients.push(client);
  return client;
}

/** Like events.once, but without rejecting on 'error' (engine errors are ordinary events here). */
function nextEvent(client, name) {
  return new Promise((resolve) => client.once(name, resolve));
}

async function startClient(extraArgs) {
  const client = makeClient(extraArgs).start();
  await client.waitReady({ timeoutMs });
  return client;
}

describe('Client', () => {
  test('command line', () => {
    const client = new Client({ binaryPath: '/opt/channel', modelPath: 'm.gguf', extraArgs: ['--threads', '2'] });
    assert.deepEqual(client.argv, ['/opt/channel', '--model', 'm.gguf', '--serve', '--threads', '2']);
  });

  test('ready, then a turn', async () => {
    const client = await startClient();
    assert.equal(client.readyStatus.msgId, 0);
    const msgId = client.sendInput('hello sea');
    const turn = await client.collectTurn(msgId, { timeoutMs });
    assert.equal(turn.content, 'You said: hello sea');
    assert.equal(turn.thought, '');
    assert.equal(turn.reason, STOP_END_OF_TURN);
    assert.deepEqual(turn.complete, { msgId, totalTok: 4, elapsedMs: 5, tokSec: 200, reason: STOP_END_OF_TURN });
    assert.ok(turn.events.every((e) => e.data.msgId === msgId));
  });

  test('events are emitted in order, the idle status after turnComplete', async () => {
    const client = await startClient();
    const seen = [];
    for (const name of ['content', 'turnComplete', 'status']) client.on(name, () => seen.push(name));
    const msgId = client.sendInput('a');
    await client.waitFor(({ event, data }) => event === 'status' && data.msgId === msgId, { timeoutMs });
    assert.deepEqual(seen, ['content', 'content', 'content', 'turnComplete', 'status']);
  });

  test('reason streams thoughts first', async () => {
    const client = await startClient();
    const turn = await client.collectTurn(client.sendInput('hi', { reason: true }), { timeoutMs });
    assert.equal(turn.thought, 'Let me think.');
    assert.equal(turn.content, 'You said: hi');
    assert.equal(turn.events[0].event, 'thought');
  });

  test('token input', async () => {
    const client = await startClient();
    const turn = await client.collectTurn(client.sendInput('', { tokens: [2, 651] }), { timeoutMs });
    assert.equal(turn.content, 'ids: 2 651');
  });

  test('elastic yield and resume', async () => {
    const client = await startClient();
    const turn = await client.collectTurn(client.sendInput('yield'), { timeoutMs });
    assert.equal(turn.reason, STOP_ELASTIC_YIELD);
    const resumed = await client.collectTurn(client.sendResume(), { timeoutMs });
    assert.deepEqual([resumed.content, resumed.reason], [' resumed', STOP_END_OF_TURN]);
  });

  test('tool call and tool return', async () => {
    const client = await startClient();
    const turn = await client.collectTurn(client.sendInput('tool'), { timeoutMs });
    assert.equal(turn.reason, STOP_TOOL_CALL);
    assert.deepEqual(
      turn.toolCalls.map(({ callId, toolName, argsJson }) => [callId, toolName, argsJson]),
      [[1, 'search', '{query:<|"|>sea<|"|>}']],
    );
    const result = await client.collectTurn(client.sendToolReturn('search', { hits: 0 }), { timeoutMs });
    assert.equal(result.content, 'result: {"hits":0}');
  });

  test('probe resolves with its result, also emitted as an event', async () => {
    const client = await startClient();
    const emitted = nextEvent(client, 'autonomicResult');
    const result = await client.probe('Is it raining?', ['no', 'yes'], 1, 0.6, { timeoutMs });
    assert.deepEqual(
      [result.winningIdx, result.confidence, result.entropy, result.costMs, result.text],
      [1, 0.75, 0.5, 1.5, ''],
    );
    assert.deepEqual(await emitted, result);
  });

  test('concurrent probes are matched by msgId', async () => {
    const client = await startClient();
    const counts = [2, 3, 4, 5];
    const results = await Promise.all(
      counts.map((n) => client.probe('p', Array.from({ length: n }, (_, i) => String(i)), 1, 0.6, { timeoutMs })),
    );
    assert.deepEqual(
      results.map((r) => r.winningIdx),
      [1, 2, 3, 4],
    );
  });

  test('mem query response is parsed', async () => {
    const client = await startClient();
    const msgId = client.sendMemQuery('sea', 2);
    const data = await nextEvent(client, 'memResponse');
    assert.deepEqual(data, { msgId, count: 2, status: 0, cursor: 0, totalTokens: 0, timestamps: [1000, 1001] });
  });

  test('snapshot save status', async () => {
    const client = await startClient();
    const msgId = client.sendSnapshotSave('s.bin', 'entry-1');
    const data = await nextEvent(client, 'snapshotStatus');
    assert.deepEqual(data, { msgId, status: 0, activeSlots: 7, clock: 42, streamId: 'entry-1' });
  });

  test('pong', async () => {
    const client = await startClient();
    const msgId = client.ping();
    assert.deepEqual(await nextEvent(client, 'pong'), { msgId });
  });

  test('engine error, then exit', async () => {
    const client = await startClient();
    const errors = [];
    client.on('error', (data) => errors.push(data));
    const msgId = client.sendSnapshotLoad('missing');
    const exit = await nextEvent(client, 'exit');
    assert.deepEqual(errors, [{ msgId, error: 'Failed to load snapshot', local: false }]);
    assert.deepEqual(exit, { code: 1, signal: null });
    assert.throws(() => client.ping(), EngineExitedError);
    await assert.rejects(client.waitFor(() => true), EngineExitedError);
  });

  test('exit during a turn rejects collectTurn', async () => {
    const client = await startClient();
    const turn = client.collectTurn(client.sendInput('crash'), { timeoutMs });
    await assert.rejects(turn, (error) => error instanceof EngineExitedError && error.code === 3);
  });

  test('a pending probe rejects when the engine exits', async () => {
    const client = await startClient();
    client.sendInput('crash');
    await assert.rejects(client.probe('p', ['a'], 1, 0.6, { timeoutMs }), EngineExitedError);
  });

  test('waitFor times out', async () => {
    const client = await startClient();
    await assert.rejects(client.waitFor(() => false, { timeoutMs: 50 }), { name: 'TimeoutError' });
  });

  test('garbage on stdout is reported and skipped', async () => {
    const client = makeClient(['--garbage']);
    const errors = [];
    client.on('error', (data) => errors.push(data));
    client.start();
    await client.waitReady({ timeoutMs });
    assert.deepEqual(errors, [{ msgId: 0, error: 'skipped 15 bytes of non-frame data on stdout', local: true }]);
    const turn = await client.collectTurn(client.sendInput('garbage'), { timeoutMs });
    assert.equal(turn.content, 'You said: garbage');
    assert.ok(errors.length > 1 && errors.every((e) => e.local));
  });

  test('setConfig merges with the previous values', async () => {
    const client = await startClient();
    client.setConfig({ temp: 0.5 });
    client.setConfig({ budget: 100, maxTokens: 256 });
    assert.deepEqual(
      [client.config.temp, client.config.maxTokens, client.config.thinkingBudget, client.config.topP],
      [0.5, 256, 100, 0.95],
    );
    assert.throws(() => client.setConfig({ temperature: 0.5 }), TypeError);
  });

  test('system prompt, then shutdown', async () => {
    const client = await startClient();
    const msgId = client.sendSystem({ instructions: 'Be brief.' });
    await client.waitFor(({ event, data }) => event === 'status' && data.msgId === msgId, { timeoutMs });
    const exited = nextEvent(client, 'exit');
    assert.deepEqual(await client.shutdown({ timeoutMs }), { code: 0, signal: null });
    assert.deepEqual(await exited, { code: 0, signal: null });
  });

  test('sendRaw writes bytes as they are, in order with framed requests', async () => {
    const client = await startClient();
    const frame = pingFrame(0x8001);
    client.sendRaw(frame.subarray(0, 5)); // split anywhere: the engine reads a byte stream
    client.sendRaw(new Uint8Array(frame.subarray(5)));
    const pongs = [];
    client.on('pong', (data) => pongs.push(data.msgId));
    const msgId = client.ping();
    await client.waitFor(({ event, data }) => event === 'pong' && data.msgId === msgId, { timeoutMs });
    assert.deepEqual(pongs, [0x8001, msgId]);
    assert.equal(msgId, 1, 'raw bytes take no msgId of the client');
  });

  test('closeInput is EOF without SHUTDOWN; later writes throw', async () => {
    const client = await startClient();
    assert.deepEqual(await client.closeInput(), { code: 0, signal: null });
    assert.throws(() => client.sendRaw(pingFrame(1)), EngineExitedError);
    assert.throws(() => client.ping(), EngineExitedError);
  });

  test('sendRaw before start throws', () => {
    assert.throws(() => makeClient().sendRaw(Buffer.alloc(1)), /not started/);
  });

  test('a missing binary is reported as error and exit', async () => {
    const client = new Client({ binaryPath: '/nonexistent/channel', modelPath: 'm' });
    const errors = [];
    client.on('error', (data) => errors.push(data));
    client.start();
    const exit = await nextEvent(client, 'exit');
    assert.equal(errors.length, 1);
    assert.match(errors[0].error, /ENOENT/);
    assert.notEqual(exit.code, 0);
  });

  test('msgIds skip zero when wrapping', async () => {
    const client = await startClient();
    let last = 0;
    for (let i = 0; i < 0xffff; i++) last = client.ping();
    assert.equal(last, 0xffff);
    assert.equal(client.ping(), 1);
  });
});
