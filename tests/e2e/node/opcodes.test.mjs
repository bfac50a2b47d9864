// Every inbound opcode against the real engine, each with the reply it must get
// (docs/protocol.md, "Opcodes" and "Server behaviour"). The scripted model makes the turns
// predictable from scripted_model.json. RESUME after a yield (CONTINUE and CLOSE_THOUGHT) and
// TOOL_RETURN are the scripted walkthroughs of turns.test.mjs; ABORT of a running request is
// abort.test.mjs.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  MEM_STATUS_NO_MATCH,
  MEM_STATUS_OK,
  SNAPSHOT_STATUS_EXISTS,
  SNAPSHOT_STATUS_LOADED,
  SNAPSHOT_STATUS_SAVED,
  STATUS_ENCODING,
  STATUS_IDLE,
  STOP_ELASTIC_YIELD,
  STOP_END_OF_TURN,
  STOP_MAX_TOKENS,
} from '../../../clients/node/src/protocol.js';
import {
  EXPECT,
  SUITE,
  TIMEOUT_MS,
  collectReply,
  engineSuite,
  pingThrough,
  renderUserTurn,
  replyTo,
  tokenFrames,
  tokenize,
  turnOf,
  words,
} from './support.mjs';

const CONFIG = { temp: 0, maxTokens: 64 };
const USER_TEXT = 'Hello';

/** Checks a turn's token frames: all content, `text`, consecutive clocks from `firstClock`. */
function assertContent(turn, { text, firstClock }) {
  const frames = tokenFrames(turn);
  assert.equal(turn.content, text);
  assert.deepEqual(
    frames.map((f) => [f.kind, f.clock]),
    frames.map((_, i) => ['content', firstClock + i]),
  );
  assert.equal(turn.complete.totalTok, frames.length);
}

describe('inbound opcodes', SUITE, () => {
  const suite = engineSuite('scripted');
  const start = () => suite.start({ config: CONFIG });

  test('STREAM_INPUT text: STATUS(encoding) over the prompt, the first paragraph, yield, STATUS(idle)', async () => {
    const client = await start();
    const prompt = tokenize(renderUserTurn(USER_TEXT)); // BOS first: the session is at clock 0
    const msgId = client.sendInput(USER_TEXT);
    const reply = await collectReply(client, msgId);

    const names = reply.map((e) => e.event);
    const firstToken = names.indexOf('content');
    assert.ok(firstToken > 0, names.join());
    assert.deepEqual(names.slice(-2), ['turnComplete', 'status']);
    const encoding = reply.slice(0, firstToken).map((e) => e.data);
    assert.ok(encoding.every((s) => s.status === STATUS_ENCODING));
    assert.deepEqual([encoding[0].currentTok, encoding[0].totalTok], [0, prompt.length]);
    assert.equal(encoding.at(-1).currentTok, prompt.length);
    assert.equal(reply.at(-1).data.status, STATUS_IDLE);

    const content = reply.filter((e) => e.event === 'content').map((e) => e.data.text).join('');
    assertContent({ msgId, events: reply, content, complete: reply.at(-2).data }, {
      text: EXPECT.firstParagraph,
      firstClock: prompt.length,
    });
    assert.equal(reply.at(-2).data.reason, STOP_ELASTIC_YIELD);
  });

  test('STREAM_INPUT token ids: the rendered turn as ids gives the same turn as its text', async () => {
    const client = await start();
    const ids = tokenize(renderUserTurn(USER_TEXT));
    const turn = await turnOf(client, client.sendInput('', { tokens: ids }));
    assertContent(turn, { text: EXPECT.firstParagraph, firstClock: ids.length });
    assert.equal(turn.reason, STOP_ELASTIC_YIELD);
  });

  test('STREAM_INPUT INPUT_FLAG_REASON: no empty thought block, the model goes on after "model\\n"', async () => {
    const client = await start();
    const prompt = tokenize(renderUserTurn(USER_TEXT, { reason: true }));
    // The prompt ends in the '\n' token, which the after_tool script continues up to <turn|>.
    assert.equal(prompt.at(-1), tokenize('\n').at(-1));
    const turn = await turnOf(client, client.sendInput(USER_TEXT, { reason: true }));
    assertContent(turn, { text: EXPECT.afterToolThought, firstClock: prompt.length });
    assert.equal(turn.reason, STOP_END_OF_TURN);
  });

  test('STREAM_INPUT INPUT_FLAG_RAW: the text goes in verbatim, without the turn template', async () => {
    const client = await start();
    const text = EXPECT.alphaFirstWord;
    const turn = await turnOf(client, client.sendInput(text, { raw: true }));
    // Not a user turn: the model continues the thought script's text, as content.
    assertContent(turn, { text: EXPECT.alphaContinuation, firstClock: tokenize(text).length });
    assert.equal(turn.reason, STOP_ELASTIC_YIELD);
  });

  test('ABORT while idle: no reply, and the next request runs in full', async () => {
    const client = await start();
    const abortId = client.sendAbort();
    const seen = await pingThrough(client);
    assert.deepEqual(seen.filter((e) => e.data?.msgId === abortId), []);
    const turn = await turnOf(client, client.sendInput(USER_TEXT));
    assert.deepEqual([turn.content, turn.reason], [EXPECT.firstParagraph, STOP_ELASTIC_YIELD]);
  });

  test('MEM_QUERY: MEM_RESPONSE with count 0 and status 1 (no memory)', async () => {
    const client = await start();
    const msgId = client.sendMemQuery('anything', 5);
    const { data } = await replyTo(client, msgId, ['memResponse', 'error']);
    assert.deepEqual(data, { msgId, count: 0, status: MEM_STATUS_NO_MATCH, cursor: 0, totalTokens: 0, timestamps: [] });
  });

  test('MEM_QUERY after a turn: the episode is recalled (status 0, a timestamp, injected tokens)', async () => {
    const client = await start();
    const before = Date.now();
    const turn = await turnOf(client, client.sendInput(USER_TEXT));
    const msgId = client.sendMemQuery('hello', 3);
    const { data } = await replyTo(client, msgId, ['memResponse', 'error']);
    assert.equal(data.status, MEM_STATUS_OK);
    assert.ok(data.count >= 1 && data.count === data.timestamps.length, JSON.stringify(data));
    assert.ok(data.totalTokens >= 1 && data.totalTokens <= Math.min(128, turn.complete.totalTok + 1), JSON.stringify(data));
    for (const ms of data.timestamps) assert.ok(ms >= before - 1000 && ms <= Date.now() + 1000, `${ms} vs ${before}`);
  });

  test('SET_CONFIG: maxTokens 3 ends the next turn with MAX_TOKENS after 3 content tokens', async () => {
    const client = await start();
    const first = words(EXPECT.firstParagraph).slice(0, 3).join(' ');
    assert.equal(tokenize(first).length, 1 + 3, 'precondition: the first three words are three tokens');
    const configId = client.setConfig({ maxTokens: 3 });
    const seen = await pingThrough(client);
    assert.deepEqual(seen.filter((e) => e.data?.msgId === configId), [], 'SET_CONFIG has no reply');
    const turn = await turnOf(client, client.sendInput(USER_TEXT));
    assert.deepEqual([turn.content, turn.reason, turn.complete.totalTok], [first, STOP_MAX_TOKENS, 3]);
  });

  test('MEM_COMMIT: no reply; a ping afterwards is answered', async () => {
    const client = await start();
    const msgId = client.sendMemCommit();
    const seen = await pingThrough(client);
    assert.deepEqual(seen.filter((e) => e.data?.msgId === msgId), []);
  });

  test('SET_SYSTEM {instructions, tools}: STATUS(encoding)… STATUS(idle); the next turn follows it', async () => {
    const client = await start();
    const msgId = client.sendSystem({
      instructions: 'Answer in numbers.',
      tools: [{ name: 'lookup', description: 'Looks it up', parameters: { type: 'object', properties: {} } }],
    });
    const reply = await collectReply(client, msgId);
    assert.ok(reply.every((e) => e.event === 'status'), reply.map((e) => e.event).join());
    const statuses = reply.map((e) => e.data.status);
    assert.deepEqual(statuses, [...statuses.slice(0, -1).map(() => STATUS_ENCODING), STATUS_IDLE]);
    const systemTokens = reply[0].data.totalTok; // BOS + the rendered system turn
    assert.equal(reply.at(-2).data.currentTok, systemTokens);

    const prompt = tokenize(renderUserTurn(USER_TEXT)).slice(1); // no BOS after clock 0
    const turn = await turnOf(client, client.sendInput(USER_TEXT));
    assertContent(turn, { text: EXPECT.firstParagraph, firstClock: systemTokens + prompt.length });
  });

  test('SNAPSHOT_SAVE and SNAPSHOT_LOAD: saved, exists while nothing changed, loaded + STATUS(idle)', async () => {
    const client = await start();
    const turn = await turnOf(client, client.sendInput(USER_TEXT));
    // The token held at the yield is streamed, not fed: the clock stands at its frame's clock.
    const clock = tokenFrames(turn).at(-1).clock;

    const saveId = client.sendSnapshotSave('opcodes.snap', 'entry-1');
    const saved = await replyTo(client, saveId, ['snapshotStatus', 'error']);
    assert.equal(saved.event, 'snapshotStatus', JSON.stringify(saved.data));
    assert.deepEqual([saved.data.status, saved.data.clock, saved.data.streamId], [SNAPSHOT_STATUS_SAVED, clock, 'entry-1']);
    assert.ok(saved.data.activeSlots > 0);

    const again = await replyTo(client, client.sendSnapshotSave('opcodes.snap', 'entry-2'), ['snapshotStatus', 'error']);
    assert.deepEqual([again.event, again.data.status, again.data.clock], ['snapshotStatus', SNAPSHOT_STATUS_EXISTS, clock]);

    const loadId = client.sendSnapshotLoad('opcodes.snap');
    const reply = await collectReply(client, loadId);
    assert.deepEqual(
      reply.map((e) => e.event),
      ['snapshotStatus', 'status'],
    );
    const [loaded, idle] = reply.map((e) => e.data);
    assert.deepEqual(
      [loaded.status, loaded.clock, loaded.streamId, loaded.activeSlots],
      [SNAPSHOT_STATUS_LOADED, clock, 'entry-1', saved.data.activeSlots],
    );
    assert.equal(idle.status, STATUS_IDLE);
  });

  test('RESUME with nothing held: TURN_COMPLETE(end of turn, 0 tokens) and STATUS(idle)', async () => {
    const client = await start();
    const msgId = client.sendResume();
    const reply = await collectReply(client, msgId);
    assert.deepEqual(
      reply.map((e) => e.event),
      ['turnComplete', 'status'],
    );
    assert.deepEqual([reply[0].data.reason, reply[0].data.totalTok], [STOP_END_OF_TURN, 0]);
  });

  test('PING: PONG with its msgId', async () => {
    const client = await start();
    const pongs = [];
    client.on('pong', (data) => pongs.push(data));
    const ids = [client.ping(), client.ping(), client.ping()];
    await replyTo(client, ids.at(-1), ['pong', 'error']);
    assert.deepEqual(pongs, ids.map((msgId) => ({ msgId })));
  });

  test('PROBE_AUTONOMIC discrete: the candidate the model writes next wins', async () => {
    const client = await start();
    // Between turns the prompt is framed as a user turn closed by the empty thought block, whose
    // <channel|> the answer script continues with its first word.
    const [next, other] = words(EXPECT.firstParagraph);
    const candidates = [other, next, 'zeta'];
    const msgId = client.sendProbeAutonomic('Which word comes first?', candidates, 1);
    const statuses = [];
    const listener = (data) => data.msgId === msgId && statuses.push(data.status);
    client.on('status', listener);
    const { data } = await replyTo(client, msgId, ['autonomicResult', 'error']);
    client.off('status', listener);
    assert.ok(statuses.length > 0 && statuses.every((s) => s === STATUS_ENCODING), String(statuses));
    assert.equal(data.winningIdx, 1);
    assert.ok(data.confidence > 0.99, String(data.confidence));
    assert.ok(data.entropy >= 0 && data.entropy < 0.05, String(data.entropy));
    assert.ok(data.costMs >= 0);
    assert.equal(data.text, '');
  });

  test('PROBE_AUTONOMIC generative: the next tokens as raw vocabulary pieces', async () => {
    const client = await start();
    const expected = words(EXPECT.firstParagraph).slice(0, 4);
    assert.equal(tokenize(expected.join(' ')).length, 1 + 4, 'precondition: four words, four tokens');
    const result = await client.probe('Count please.', [], 4, 0.6, { timeoutMs: TIMEOUT_MS });
    // Raw pieces as the original sends them (reference §1.6.7): spaces as U+2581.
    assert.deepEqual(
      [result.winningIdx, result.confidence, result.entropy, result.text],
      [0, 0, 0, expected.join('\u2581')],
    );
  });

  test('SHUTDOWN: the requests queued before it are answered, then the engine exits with code 0', async () => {
    const client = await start();
    const events = [];
    const exited = client.waitFor(
      (entry) => {
        events.push(entry);
        return entry.event === 'exit';
      },
      { timeoutMs: TIMEOUT_MS },
    );
    const expected = [
      [client.sendInput(USER_TEXT), 'turnComplete'],
      [client.sendProbeAutonomic('Which word comes first?', ['One', 'Two']), 'autonomicResult'],
      [client.sendMemQuery('anything'), 'memResponse'],
      [client.ping(), 'pong'],
    ];
    const exitInfo = await client.shutdown({ timeoutMs: TIMEOUT_MS });
    await exited;
    assert.deepEqual(exitInfo, { code: 0, signal: null });
    for (const [msgId, event] of expected) {
      assert.ok(
        events.some((e) => e.event === event && e.data.msgId === msgId),
        `${event} for msgId ${msgId} before the exit`,
      );
    }
    assert.deepEqual(client.errors, []);
  });
});
