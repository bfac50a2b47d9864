// 1,000 random malformed frames (seeded), each followed by a PING that must be answered with a
// PONG: the engine refuses bad input with OP_ERROR and keeps serving, in step with the stream
// (docs/protocol.md, "Deviations from the original" 1 and 2). Frames whose refusal the protocol
// prescribes must get an OP_ERROR with their msgId before that PONG.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { encodeFrame } from '../../../clients/node/src/framing.js';
import * as P from '../../../clients/node/src/protocol.js';
import { GREEDY, SUITE, engineSuite, pingThrough, prng, rawHeader, turnOf } from './support.mjs';

const FRAMES = 1000;
const SEED = 0x5eed;
// Frames that happen to decode run as requests: keep them short.
const CONFIG = { ...GREEDY, maxTokens: 2, thinkingBudget: 0 };
// Every inbound opcode but SHUTDOWN (which would end the session).
const INBOUND = [
  P.OP_STREAM_INPUT, P.OP_ABORT, P.OP_MEM_QUERY, P.OP_SET_CONFIG, P.OP_TOOL_RETURN, P.OP_MEM_COMMIT, P.OP_SET_SYSTEM,
  P.OP_SNAPSHOT_SAVE, P.OP_SNAPSHOT_LOAD, P.OP_RESUME, P.OP_PING, P.OP_PROBE_AUTONOMIC,
];
const KNOWN = new Set([...INBOUND, P.OP_SHUTDOWN]);
const OUTBOUND = [
  P.OP_STREAM_CONTENT, P.OP_STREAM_THOUGHT, P.OP_TURN_COMPLETE, P.OP_TOOL_CALL, P.OP_MEM_RESPONSE, P.OP_STATUS,
  P.OP_SNAPSHOT_STATUS, P.OP_AUTONOMIC_RESULT, P.OP_PONG, P.OP_ERROR,
];
// Shortest payload each opcode's layout accepts (docs/protocol.md, "Inbound payloads").
const MIN_PAYLOAD = new Map([
  [P.OP_STREAM_INPUT, 8], [P.OP_MEM_QUERY, 4], [P.OP_SET_CONFIG, 20], [P.OP_TOOL_RETURN, 6],
  [P.OP_SNAPSHOT_SAVE, 4], [P.OP_SNAPSHOT_LOAD, 1], [P.OP_PROBE_AUTONOMIC, 10],
]);
// Far above any Gemma vocabulary (262,144 entries).
const OUTSIDE_VOCAB = 1 << 20;

function tokenInput(ids, count = ids.length, mode = P.MODE_TOKENS) {
  const payload = Buffer.alloc(8 + 4 * ids.length);
  payload.writeUInt8(mode, 0);
  payload.writeUInt16LE(count, 2);
  ids.forEach((id, i) => payload.writeUInt32LE(id >>> 0, 8 + 4 * i));
  return payload;
}

/**
 * Kinds of malformed input: each makes `{bytes, refusedId}` for a msgId, where refusedId is the
 * msgId an OP_ERROR must carry (null: any reply, or none, will do).
 */
const KINDS = {
  unknownOpcode(rng, msgId) {
    let opcode = rng.next() < 0.5 ? rng.pick(OUTBOUND) : rng.int(0x10000);
    while (KNOWN.has(opcode)) opcode = rng.int(0x10000);
    return { bytes: encodeFrame(opcode, msgId, rng.bytes(rng.int(25))), refusedId: msgId };
  },
  randomPayload(rng, msgId) {
    const opcode = rng.pick(INBOUND);
    const payload = rng.bytes(rng.int(25));
    // A random snapshot path stays inside the scratch folder.
    if (opcode === P.OP_SNAPSHOT_SAVE) payload.forEach((byte, i) => byte === 0x2f && (payload[i] = 0x5f));
    const reconfigured = opcode === P.OP_SET_CONFIG && payload.length >= 20;
    return { bytes: encodeFrame(opcode, msgId, payload), refusedId: null, reconfigured };
  },
  tokenCountBeyondPayload(rng, msgId) {
    const ids = Array.from({ length: rng.int(4) }, () => rng.int(1000));
    const payload = tokenInput(ids, ids.length + 1 + rng.int(100));
    return { bytes: encodeFrame(P.OP_STREAM_INPUT, msgId, payload), refusedId: msgId };
  },
  tokenOutsideVocabulary(rng, msgId) {
    const ids = Array.from({ length: 1 + rng.int(4) }, () => rng.int(1000));
    ids[rng.int(ids.length)] = OUTSIDE_VOCAB + rng.int(0xffffffff - OUTSIDE_VOCAB);
    return { bytes: encodeFrame(P.OP_STREAM_INPUT, msgId, tokenInput(ids)), refusedId: msgId };
  },
  unsupportedMode(rng, msgId) {
    const payload = tokenInput([rng.int(1000)], 1, 2 + rng.int(254));
    return { bytes: encodeFrame(P.OP_STREAM_INPUT, msgId, payload), refusedId: msgId };
  },
  payloadTooShort(rng, msgId) {
    const [opcode, min] = rng.pick([...MIN_PAYLOAD]);
    return { bytes: encodeFrame(opcode, msgId, rng.bytes(rng.int(min))), refusedId: msgId };
  },
  badHeader(rng, msgId) {
    const broken = rng.next() < 0.5 ? { magic: rng.int(0x100000000) } : { version: 2 + rng.int(0xfffe) };
    const junk = rng.bytes(rng.int(25));
    // Nothing in a refused header is trusted: its error carries msgId 0.
    return { bytes: Buffer.concat([rawHeader(msgId, P.OP_PING, junk.length, broken), junk]), refusedId: 0 };
  },
};
const WEIGHTED = [
  ...Array(4).fill('randomPayload'),
  ...Array(2).fill('unknownOpcode'),
  'tokenCountBeyondPayload',
  'tokenOutsideVocabulary',
  'unsupportedMode',
  'payloadTooShort',
  'badHeader',
];

describe('malformed frames', SUITE, () => {
  const suite = engineSuite('plain');

  test(`${FRAMES} random malformed frames, each followed by an answered PING`, async () => {
    const client = await suite.start({ config: CONFIG });
    const rng = prng(SEED);
    const counts = {};
    for (let i = 0; i < FRAMES; i++) {
      const kind = rng.pick(WEIGHTED);
      const msgId = 0x8000 + i; // outside the ids of the client's own requests
      const { bytes, refusedId, reconfigured } = KINDS[kind](rng, msgId);
      client.sendRaw(bytes);
      if (reconfigured) client.setConfig(CONFIG); // a random configuration could make turns long
      const seen = await pingThrough(client, `${kind} #${i}: ${bytes.toString('hex')}`);
      if (refusedId !== null) {
        assert.ok(
          seen.some(({ event, data }) => event === 'error' && data.msgId === refusedId && !data.local),
          `${kind} #${i} (${bytes.toString('hex')}) got no OP_ERROR with msgId ${refusedId}`,
        );
      }
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
    assert.deepEqual(Object.keys(counts).sort(), Object.keys(KINDS).sort(), 'every kind was sent');
    // Nothing but frames on stdout, and the session still serves a turn.
    assert.deepEqual(client.errors.filter((e) => e.local), []);
    const turn = await turnOf(client, client.sendInput('Still there?'));
    assert.ok([P.STOP_END_OF_TURN, P.STOP_MAX_TOKENS, P.STOP_TOOL_CALL].includes(turn.reason), String(turn.reason));
  });
});
