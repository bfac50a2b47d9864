// Turn logic with the scripted model (scripted_model.json, "walkthrough"): elastic yields,
// RESUME (CONTINUE and CLOSE_THOUGHT), tool calls and TOOL_RETURN, a yield kept in a snapshot,
// and barge-in.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { STOP_ELASTIC_YIELD, STOP_END_OF_TURN, STOP_TOOL_CALL } from '../../../clients/node/src/protocol.js';
import { EXPECT, SUITE, engineSuite, renderUserTurn, replyTo, tokenFrames, tokenize, turnOf } from './support.mjs';

const USER_TEXT = 'Please look it up';

/** [content, thought, reason] of a turn, for one deepEqual. */
const summary = (turn) => [turn.content, turn.thought, turn.reason];

describe('scripted turns', SUITE, () => {
  const suite = engineSuite('scripted');
  const start = () => suite.start({ config: { temp: 0, maxTokens: 64 } });

  test('tool call round trip: yield, RESUME, TOOL_CALL, TOOL_RETURN, thought, end of turn', async () => {
    const client = await start();
    const first = await turnOf(client, client.sendInput(USER_TEXT));
    assert.deepEqual(summary(first), [EXPECT.firstParagraph, '', STOP_ELASTIC_YIELD]);
    const held = tokenFrames(first).at(-1);

    const resumed = await turnOf(client, client.sendResume());
    assert.deepEqual(summary(resumed), [EXPECT.beforeToolCall, '', STOP_TOOL_CALL]);
    // RESUME feeds the held token at its clock: the burst goes on right after it.
    assert.equal(tokenFrames(resumed)[0].clock, held.clock + 1);
    assert.deepEqual(
      resumed.toolCalls.map(({ callId, toolName, argsJson }) => [callId, toolName, argsJson]),
      [[1, EXPECT.toolName, EXPECT.toolArgs]],
    );

    const answered = await turnOf(client, client.sendToolReturn(EXPECT.toolName, { ok: true }));
    assert.deepEqual(summary(answered), ['', EXPECT.afterToolThought, STOP_END_OF_TURN]);
    assert.deepEqual(answered.toolCalls, []);
    assert.deepEqual(client.errors, []);
  });

  test('thought yield, then RESUME with closeThought: the answer follows as content', async () => {
    const client = await start();
    // A raw turn that leaves the model inside a thought after the thought script's first word.
    const raw = `${renderUserTurn('Think', { reason: true })}<|channel>thought\n${EXPECT.alphaFirstWord}`;
    const thinking = await turnOf(client, client.sendInput(raw, { raw: true, reason: true }));
    assert.deepEqual(summary(thinking), ['', EXPECT.alphaContinuation, STOP_ELASTIC_YIELD]);
    assert.equal(tokenFrames(thinking)[0].clock, tokenize(raw).length);

    // CLOSE_THOUGHT feeds <channel|> in place of the held paragraph break: the answer script runs.
    const closed = await turnOf(client, client.sendResume({ closeThought: true }));
    assert.deepEqual(summary(closed), [EXPECT.firstParagraph, '', STOP_ELASTIC_YIELD]);
    assert.equal(tokenFrames(closed)[0].clock, tokenFrames(thinking).at(-1).clock + 1);
  });

  test('a yield survives a snapshot: loaded into a fresh engine, RESUME goes on to the tool call', async () => {
    const client = await start();
    const first = await turnOf(client, client.sendInput(USER_TEXT));
    assert.equal(first.reason, STOP_ELASTIC_YIELD);
    const saved = await replyTo(client, client.sendSnapshotSave('yield.snap'), ['snapshotStatus', 'error']);
    assert.equal(saved.event, 'snapshotStatus', JSON.stringify(saved.data));
    await client.shutdown();

    const fresh = await start();
    const loaded = await replyTo(fresh, fresh.sendSnapshotLoad('yield.snap'), ['snapshotStatus', 'error']);
    assert.equal(loaded.event, 'snapshotStatus', JSON.stringify(loaded.data));
    const resumed = await turnOf(fresh, fresh.sendResume());
    assert.deepEqual(summary(resumed), [EXPECT.beforeToolCall, '', STOP_TOOL_CALL]);
    assert.equal(tokenFrames(resumed)[0].clock, tokenFrames(first).at(-1).clock + 1);
  });

  test('barge-in during a yield: the same input again yields the same paragraph, clocks shifted', async () => {
    const client = await start();
    const first = await turnOf(client, client.sendInput(USER_TEXT));
    assert.deepEqual(summary(first), [EXPECT.firstParagraph, '', STOP_ELASTIC_YIELD]);
    const frames = tokenFrames(first);
    // Turn 1's prompt is BOS + the rendered turn at clocks 0..T1-1, so its first token frame
    // carries clock T1. The token held at the yield (the last frame) was streamed but not fed:
    // the clock stands at its clock H. New input without RESUME drops it and closes the open
    // model turn with <turn|>, fed at clock H; then the rendered turn follows without BOS
    // (T1 - 1 tokens) at clocks H+1..H+T1-1, so the second turn's first token has clock H + T1.
    const t1 = frames[0].clock;
    assert.equal(t1, tokenize(renderUserTurn(USER_TEXT)).length);
    const heldClock = frames.at(-1).clock;

    const second = await turnOf(client, client.sendInput(USER_TEXT));
    assert.deepEqual(summary(second), [EXPECT.firstParagraph, '', STOP_ELASTIC_YIELD]);
    assert.equal(tokenFrames(second)[0].clock, heldClock + t1);
    assert.deepEqual(
      tokenFrames(second).map((f) => f.tokenId),
      frames.map((f) => f.tokenId),
    );
  });
});
