// Shared support of the Node end-to-end tests (`node --test node/*.test.mjs` from tests/e2e): the real
// `channel` binary in --serve mode, driven through the Node client in clients/node.
//
// Environment: CHANNEL_BINARY (the engine) and CHANNEL_VOCAB (a Gemma 4 vocabulary GGUF to
// synthesize tiny models with). Without them every suite is skipped. CHANNEL_E2E_STDERR=inherit
// shows the engines' logs (default: discarded).
//
// A test file calls `engineSuite(kind)` inside its describe(): it makes a scratch folder (the
// working directory of the file's engines, so relative snapshot paths and stray files land
// there), synthesizes the model once, kills the engines a test leaves running and removes the
// folder at the end. Models: 'plain' (random weights) or 'scripted' (scripted_model.json: its
// greedy continuation of each scripted token is the next token of its script).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '../../../clients/node/src/index.js';
import { HEADER_SIZE, MAGIC, STATUS_IDLE, VERSION } from '../../../clients/node/src/protocol.js';

export const BINARY = process.env.CHANNEL_BINARY ?? '';
export const VOCAB = process.env.CHANNEL_VOCAB ?? '';
/** describe()'s `skip` option: a reason string when the environment is incomplete. */
export const SKIP = BINARY && VOCAB ? false : 'CHANNEL_BINARY and CHANNEL_VOCAB are not set';
/** Longest wait for any single reply. */
export const TIMEOUT_MS = 60000;
/** Options of every describe(): skipped without the environment; nothing may hang for long. */
export const SUITE = { skip: SKIP, timeout: 120000 };

const SYNTH_PLAIN = ['--arch', 'gemma4', '--layers', '2', '--period', '2', '--embd', '64', '--ffn', '64'];
/**
 * The scripted model's fixture: synth_args, the scripts and a walkthrough of what they do.
 * tests/e2e/scripted_model.json (over Gemma 4's vocabulary) unless CHANNEL_E2E_SCRIPTED_MODEL names
 * another of the same shape for the vocabulary in CHANNEL_VOCAB (e.g.
 * tests/reliability/scripted_tiny_vocab_model.json with channel-tiny's).
 */
const SCRIPTED_PATH = process.env.CHANNEL_E2E_SCRIPTED_MODEL || new URL('../scripted_model.json', import.meta.url);
export const SCRIPTED = JSON.parse(fs.readFileSync(SCRIPTED_PATH, 'utf8'));

// ---------------------------------------------------------------------------------------------
// What the scripted model writes, derived from the script texts (never from engine output).

const { answer: ANSWER, after_tool: AFTER_TOOL, thought: THOUGHT } = SCRIPTED.scripts;

function between(text, start, end) {
  const from = text.indexOf(start);
  assert.ok(from >= 0, `script has no ${JSON.stringify(start)}`);
  const to = text.indexOf(end, from + start.length);
  assert.ok(to >= 0, `script has no ${JSON.stringify(end)} after ${JSON.stringify(start)}`);
  return text.slice(from + start.length, to);
}

const TOOL_CALL = /<\|tool_call>call:(\w+)(\{.*?\})<tool_call\|>/.exec(ANSWER);
assert.ok(TOOL_CALL, 'the answer script ends in a tool call');
// The thought script ends in '.', which the answer script continues with the paragraph break.
assert.ok(THOUGHT.endsWith('.') && ANSWER.includes('.\n\n'));

export const EXPECT = Object.freeze({
  // A user turn without INPUT_FLAG_REASON ends with the empty thought block, whose last token is
  // <channel|>: the answer script runs up to its paragraph break (16+ response tokens), where the
  // turn yields with the '\n\n' token streamed and held.
  firstParagraph: `${between(ANSWER, '<channel|>', '\n\n')}\n\n`,
  // RESUME feeds the held token; the answer script goes on up to its tool call.
  beforeToolCall: between(ANSWER, '\n\n', '<|tool_call>'),
  toolName: TOOL_CALL[1],
  toolArgs: TOOL_CALL[2],
  // A tool response ends in '<|channel>thought\n' (the renderer opens the thought): the
  // after_tool script continues '\n' up to <turn|>.
  afterToolThought: between(AFTER_TOOL, 'thought\n', '<turn|>'),
  // The thought script after its first word, then the paragraph break that follows its '.'.
  alphaContinuation: `${THOUGHT.slice(THOUGHT.indexOf(' '))}\n\n`,
  alphaFirstWord: THOUGHT.slice(0, THOUGHT.indexOf(' ')),
});

/** Words of `text` (as raw vocabulary pieces they are joined by U+2581). */
export function words(text) {
  return text.split(/\s+/).filter(Boolean);
}

/**
 * A user turn as the engine renders STREAM_INPUT text (docs/protocol.md, "Server behaviour"):
 * the empty thought block closes it unless INPUT_FLAG_REASON.
 */
export function renderUserTurn(text, { reason = false } = {}) {
  return `<|turn>user\n${text}\n<turn|>\n<|turn>model\n${reason ? '' : '<|channel>thought\n<channel|>'}`;
}

/** Token ids of `text` with the vocabulary (`channel tokenize`: BOS first, special tokens parsed). */
export function tokenize(text) {
  const out = execFileSync(BINARY, ['tokenize', '--model', VOCAB, '--text', text], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out.trim().split(/\s+/).map(Number);
}

// ---------------------------------------------------------------------------------------------
// Engines

/** The lead rebuilds the binary now and then: wait a little for it to reappear. */
async function waitForBinary() {
  for (let i = 0; i < 60 && !fs.existsSync(BINARY); i++) await sleep(500);
}

function synthesize(kind, out) {
  const args = kind === 'scripted'
    ? [...SCRIPTED.synth_args, ...Object.values(SCRIPTED.scripts).flatMap((script) => ['--script', script])]
    : SYNTH_PLAIN;
  execFileSync(BINARY, ['model', 'synth', '--vocab', VOCAB, '--out', out, ...args], { stdio: 'ignore' });
}

const running = []; // engines started by the current test

/**
 * Registers the file's hooks (call inside describe()). Returns `{dir, model, start}` where
 * `dir` and `model` are set once the before() hook ran and `start(options)` starts an engine.
 */
export function engineSuite(kind) {
  const suite = { dir: '', model: '', start: (options) => startEngine(suite.model, options) };
  const startDir = process.cwd();
  before(async () => {
    suite.dir = fs.mkdtempSync(path.join(os.tmpdir(), `channel-e2e-node-${kind}-`));
    process.chdir(suite.dir);
    suite.model = path.join(suite.dir, `${kind}.gguf`);
    await waitForBinary();
    synthesize(kind, suite.model);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((client) => client.kill()));
  });
  after(() => {
    process.chdir(startDir);
    if (suite.dir) fs.rmSync(suite.dir, { recursive: true, force: true });
  });
  return suite;
}

/**
 * Starts an engine (one thread), waits for its ready status and sends `config` (merged into the
 * client's defaults) when given. Engine errors are collected in `client.errors` (an 'error'
 * event without a listener would throw).
 */
export async function startEngine(model, { config = null, extraArgs = [] } = {}) {
  await waitForBinary();
  const client = new Client({
    binaryPath: BINARY,
    modelPath: model,
    // CHANNEL_E2E_ENGINE_ARGS adds options (e.g. --gpu: CTest runs the suite again on Vulkan).
    extraArgs: ['--threads', '1', ...(process.env.CHANNEL_E2E_ENGINE_ARGS ?? '').split(' ').filter(Boolean), ...extraArgs],
    stderr: process.env.CHANNEL_E2E_STDERR === 'inherit' ? 'inherit' : 'ignore',
  });
  client.errors = [];
  client.on('error', (data) => client.errors.push(data));
  running.push(client);
  client.start();
  await client.waitReady({ timeoutMs: TIMEOUT_MS });
  if (config) client.setConfig(config);
  return client;
}

/** Greedy, short bursts and a small thinking budget: turns of a random model stay fast. */
export const GREEDY = Object.freeze({ temp: 0, maxTokens: 12, thinkingBudget: 8 });

/**
 * An engine of `suite` in the middle of a decode that would run for minutes (the random model
 * does not end its turn early): resolves once the first content frame of the turn `msgId` has
 * arrived. `turn` is its collectTurn promise, subscribed before any of its frames.
 */
export async function startLongDecode(suite) {
  const client = await suite.start({ config: { ...GREEDY, maxTokens: 100000 } });
  const msgId = client.sendInput('Tell me everything you know');
  const turn = turnOf(client, msgId);
  await client.waitFor(({ event, data }) => event === 'content' && data.msgId === msgId, { timeoutMs: TIMEOUT_MS });
  return { client, msgId, turn };
}

// ---------------------------------------------------------------------------------------------
// Waiting for replies

/** The first event named in `events` that carries `msgId`: {event, data}. */
export function replyTo(client, msgId, events) {
  return client.waitFor(({ event, data }) => events.includes(event) && data.msgId === msgId, {
    timeoutMs: TIMEOUT_MS,
  });
}

/** Every event carrying `msgId` from now up to and including its STATUS(idle): [{event, data}]. */
export async function collectReply(client, msgId) {
  const events = [];
  await client.waitFor(
    (entry) => {
      if (entry.data?.msgId !== msgId) return false;
      events.push(entry);
      return entry.event === 'status' && entry.data.status === STATUS_IDLE;
    },
    { timeoutMs: TIMEOUT_MS },
  );
  return events;
}

/** The turn that ends at the TURN_COMPLETE of `msgId` (see Client.collectTurn). */
export function turnOf(client, msgId) {
  return client.collectTurn(msgId, { timeoutMs: TIMEOUT_MS });
}

/** Token frames of a turn (its own msgId): [{kind, tokenId, clock, piece}]. */
export function tokenFrames(turn) {
  return turn.events
    .filter(({ event, data }) => (event === 'content' || event === 'thought') && data.msgId === turn.msgId)
    .map(({ event, data }) => ({ kind: event, tokenId: data.tokenId, clock: data.clock, piece: data.piece }));
}

/**
 * Sends a ping and asserts that a PONG (not an ERROR) answers it. Resolves with the events that
 * came before the pong: called in the same tick as an earlier send, they hold every reply to it
 * (the engine serves requests in order).
 */
export async function pingThrough(client, message = 'ping answered') {
  const before = [];
  const msgId = client.ping();
  const { event, data } = await client.waitFor(
    (entry) => {
      if (entry.data?.msgId === msgId && (entry.event === 'pong' || entry.event === 'error')) return true;
      before.push(entry);
      return false;
    },
    { timeoutMs: TIMEOUT_MS },
  );
  assert.equal(event, 'pong', `${message}: ${JSON.stringify(data)}`);
  return before;
}

/** Resolves with the error event of `msgId`, or rejects with what came instead. */
export async function expectError(client, msgId, replyEvents) {
  const { event, data } = await replyTo(client, msgId, ['error', ...replyEvents]);
  assert.equal(event, 'error', `expected an error, got ${event} ${JSON.stringify(data)}`);
  return data;
}

// ---------------------------------------------------------------------------------------------
// Raw bytes

/** A frame header with any magic and version (encodeFrame writes only valid ones). */
export function rawHeader(msgId, opcode, payloadLength, { magic = MAGIC, version = VERSION } = {}) {
  const header = Buffer.alloc(HEADER_SIZE);
  header.writeUInt32LE(magic >>> 0, 0);
  header.writeUInt16LE(version, 4);
  header.writeUInt16LE(msgId, 6);
  header.writeUInt16LE(opcode, 8);
  header.writeUInt32LE(payloadLength, 12);
  return header;
}

/** Seeded PRNG (mulberry32): `next()` in [0, 1), `int(n)` in [0, n), `pick(list)`, `bytes(n)`. */
export function prng(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return {
    next,
    int,
    pick: (list) => list[int(list.length)],
    bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))),
  };
}
