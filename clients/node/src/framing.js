// Pure frame codec for the Channel protocol: no I/O, no processes.
//
// * `*Frame(msgId, ...)` build complete inbound frames (header + payload) as Buffers.
// * `FrameReader` splits an outbound byte stream into frames `{msgId, opcode, payload}`,
//   whatever the read boundaries, and skips bytes that are not frames.
// * `decodeMessage(frame)` turns a frame into `{event, data}` (event names as emitted by Client).
//
// All integers and floats are little-endian. Layouts are the original engine's code
// (reference/original-channel.md §1.5-§1.6), not its prose docs.

import {
  HEADER_SIZE,
  INPUT_FLAG_NONE,
  MAGIC,
  MAX_PAYLOAD,
  MODE_TEXT,
  MODE_TOKENS,
  OP_ABORT,
  OP_AUTONOMIC_RESULT,
  OP_ERROR,
  OP_MEM_COMMIT,
  OP_MEM_QUERY,
  OP_MEM_RESPONSE,
  OP_PING,
  OP_PONG,
  OP_PROBE_AUTONOMIC,
  OP_RESUME,
  OP_SET_CONFIG,
  OP_SET_SYSTEM,
  OP_SHUTDOWN,
  OP_SNAPSHOT_LOAD,
  OP_SNAPSHOT_SAVE,
  OP_SNAPSHOT_STATUS,
  OP_STATUS,
  OP_STREAM_CONTENT,
  OP_STREAM_INPUT,
  OP_STREAM_THOUGHT,
  OP_TOOL_CALL,
  OP_TOOL_RETURN,
  OP_TURN_COMPLETE,
  RESUME_ACTION_CONTINUE,
  STATUS_FLAG_SATURATED,
  VERSION,
} from './protocol.js';

// Every valid header starts with magic + version; the reader resynchronises on this pattern.
const SYNC = Buffer.alloc(6);
SYNC.writeUInt32LE(MAGIC, 0);
SYNC.writeUInt16LE(VERSION, 4);

const U16_MAX = 0xffff;
const EMPTY = Buffer.alloc(0);

/** An outbound frame whose payload does not match its opcode's layout. */
export class ProtocolError extends Error {
  name = 'ProtocolError';
}

// ---------------------------------------------------------------------------------------------
// Encoding (host -> engine)

function checkU16(value, what) {
  if (!Number.isInteger(value) || value < 0 || value > U16_MAX) {
    throw new RangeError(`${what} must fit in a u16, got ${value}`);
  }
  return value;
}

function u16(value, what) {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16LE(checkU16(value, what));
  return buffer;
}

/** u16 length + UTF-8 bytes, the string encoding used inside payloads. */
function prefixed(text, what) {
  const data = Buffer.from(text, 'utf8');
  return Buffer.concat([u16(data.length, `${what} length`), data]);
}

/** Header + payload. Also used by test fixtures to build outbound frames. */
export function encodeFrame(opcode, msgId, payload = EMPTY) {
  const header = Buffer.alloc(HEADER_SIZE);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt16LE(VERSION, 4);
  header.writeUInt16LE(checkU16(msgId, 'msgId'), 6);
  header.writeUInt16LE(opcode, 8);
  header.writeUInt32LE(payload.length, 12); // bytes 10-11 reserved, left 0
  return Buffer.concat([header, payload]);
}

/** OP_STREAM_INPUT: mode u8, flags u8, token_count u16, 4 zero bytes, then text or u32 ids. */
export function streamInputFrame(msgId, text = '', flags = INPUT_FLAG_NONE, tokens = null) {
  const preamble = Buffer.alloc(8);
  preamble.writeUInt8(flags, 1);
  if (tokens == null) {
    preamble.writeUInt8(MODE_TEXT, 0);
    return encodeFrame(OP_STREAM_INPUT, msgId, Buffer.concat([preamble, Buffer.from(text, 'utf8')]));
  }
  if (text) throw new TypeError('send either text or tokens, not both');
  preamble.writeUInt8(MODE_TOKENS, 0);
  preamble.writeUInt16LE(checkU16(tokens.length, 'token count'), 2);
  const ids = Buffer.alloc(4 * tokens.length);
  tokens.forEach((id, i) => ids.writeUInt32LE(id, 4 * i));
  return encodeFrame(OP_STREAM_INPUT, msgId, Buffer.concat([preamble, ids]));
}

export function abortFrame(msgId) {
  // Must stay payload-free: the engine's reader does not consume an abort payload.
  return encodeFrame(OP_ABORT, msgId);
}

/**
 * OP_MEM_QUERY in the engine's layout: top_k u16, 2 zero bytes, query text.
 * The original client sent a 24-byte preamble the engine misreads (§1.5.3).
 */
export function memQueryFrame(msgId, query, topK = 5) {
  const preamble = Buffer.alloc(4);
  preamble.writeUInt16LE(checkU16(topK, 'topK'), 0);
  return encodeFrame(OP_MEM_QUERY, msgId, Buffer.concat([preamble, Buffer.from(query, 'utf8')]));
}

/** OP_SET_CONFIG fields; defaults are the original client's (not the engine's). */
export const DEFAULT_CONFIG = Object.freeze({
  thinkingBudget: 512,
  temp: 1.0,
  topP: 0.95,
  qThresh: 0.001,
  maxTokens: 64,
  minP: 0.05,
  repeatPenalty: 1.1,
  repeatLastN: 64,
  frequencyPenalty: 0.1,
  presencePenalty: 0.1,
  thinkingGate: false,
});

/** OP_SET_CONFIG, 41 bytes in the engine code's field order; `config` has every DEFAULT_CONFIG key. */
export function configFrame(msgId, config) {
  const payload = Buffer.alloc(41);
  payload.writeUInt32LE(config.thinkingBudget, 0);
  payload.writeFloatLE(config.temp, 4);
  payload.writeFloatLE(config.topP, 8);
  payload.writeFloatLE(config.qThresh, 12);
  payload.writeUInt32LE(config.maxTokens, 16);
  payload.writeFloatLE(config.minP, 20);
  payload.writeFloatLE(config.repeatPenalty, 24);
  payload.writeUInt32LE(config.repeatLastN, 28);
  payload.writeFloatLE(config.frequencyPenalty, 32);
  payload.writeFloatLE(config.presencePenalty, 36);
  payload.writeUInt8(config.thinkingGate ? 1 : 0, 40);
  return encodeFrame(OP_SET_CONFIG, msgId, payload);
}

/** OP_TOOL_RETURN: call_id u16, status u16, name (u16-prefixed), result to the end. */
export function toolReturnFrame(msgId, name, result, callId = 1, status = 0) {
  const payload = Buffer.concat([
    u16(callId, 'callId'),
    u16(status, 'status'),
    prefixed(name, 'tool name'),
    Buffer.from(result, 'utf8'),
  ]);
  return encodeFrame(OP_TOOL_RETURN, msgId, payload);
}

export function memCommitFrame(msgId) {
  return encodeFrame(OP_MEM_COMMIT, msgId);
}

/** OP_SET_SYSTEM: a JSON object {instructions, tools} or verbatim template text. */
export function setSystemFrame(msgId, system) {
  return encodeFrame(OP_SET_SYSTEM, msgId, Buffer.from(system, 'utf8'));
}

export function snapshotSaveFrame(msgId, path, streamId = '') {
  return encodeFrame(OP_SNAPSHOT_SAVE, msgId, Buffer.concat([prefixed(path, 'path'), prefixed(streamId, 'stream id')]));
}

export function snapshotLoadFrame(msgId, path) {
  return encodeFrame(OP_SNAPSHOT_LOAD, msgId, Buffer.from(path, 'utf8'));
}

export function resumeFrame(msgId, action = RESUME_ACTION_CONTINUE) {
  // CONTINUE is sent without a payload, exactly as the original client does.
  return encodeFrame(OP_RESUME, msgId, action === RESUME_ACTION_CONTINUE ? EMPTY : Buffer.from([action]));
}

export function pingFrame(msgId) {
  return encodeFrame(OP_PING, msgId);
}

export function shutdownFrame(msgId) {
  return encodeFrame(OP_SHUTDOWN, msgId);
}

/**
 * OP_PROBE_AUTONOMIC: max_decode u16, count u16, min_certainty f32, prompt, candidates.
 * Prompt and each candidate string are u16-length-prefixed; the engine uses only the first
 * token of each candidate.
 */
export function probeAutonomicFrame(msgId, prompt, candidates = [], maxDecodeTokens = 1, minCertainty = 0.6) {
  const preamble = Buffer.alloc(8);
  preamble.writeUInt16LE(checkU16(maxDecodeTokens, 'maxDecodeTokens'), 0);
  preamble.writeUInt16LE(checkU16(candidates.length, 'candidate count'), 2);
  preamble.writeFloatLE(minCertainty, 4);
  const parts = [preamble, prefixed(prompt, 'prompt'), ...candidates.map((c) => prefixed(c, 'candidate'))];
  return encodeFrame(OP_PROBE_AUTONOMIC, msgId, Buffer.concat(parts));
}

// ---------------------------------------------------------------------------------------------
// Decoding (engine -> host)

/** Length of the longest tail of buffer[pos:] that is a proper prefix of the sync pattern. */
function syncPrefixLength(buffer, pos) {
  for (let length = Math.min(SYNC.length - 1, buffer.length - pos); length > 0; length--) {
    if (buffer.subarray(buffer.length - length).equals(SYNC.subarray(0, length))) return length;
  }
  return 0;
}

/**
 * Incremental frame splitter for a byte stream read in arbitrary chunks.
 *
 * Bytes before the next "magic + version 1" pattern are discarded and counted in `skipped`,
 * so the reader recovers from garbage (a stray print on stdout, a frame of another protocol
 * version) instead of losing the rest of the stream.
 */
export class FrameReader {
  #buffer = EMPTY;

  constructor({ maxPayload = MAX_PAYLOAD } = {}) {
    this.maxPayload = maxPayload;
    this.skipped = 0;
  }

  /** Bytes held back waiting for the rest of a frame. */
  get pending() {
    return this.#buffer.length;
  }

  /** Adds a chunk and returns every frame completed by it, in order. */
  push(chunk) {
    const buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk;
    const frames = [];
    let pos = 0;
    for (;;) {
      const start = buffer.indexOf(SYNC, pos);
      if (start < 0) {
        // No header start: keep only a tail that could be the beginning of one.
        const keepFrom = buffer.length - syncPrefixLength(buffer, pos);
        this.skipped += keepFrom - pos;
        pos = keepFrom;
        break;
      }
      this.skipped += start - pos;
      pos = start;
      if (buffer.length - pos < HEADER_SIZE) break;
      const length = buffer.readUInt32LE(pos + 12);
      if (length > this.maxPayload) {
        // Garbage that happens to contain the sync pattern: step past it.
        this.skipped += 1;
        pos += 1;
        continue;
      }
      const end = pos + HEADER_SIZE + length;
      if (buffer.length < end) break;
      frames.push({
        msgId: buffer.readUInt16LE(pos + 6),
        opcode: buffer.readUInt16LE(pos + 8),
        payload: Buffer.from(buffer.subarray(pos + HEADER_SIZE, end)),
      });
      pos = end;
    }
    // Copy the remainder so a large chunk is not kept alive by a few leftover bytes.
    this.#buffer = Buffer.from(buffer.subarray(pos));
    return frames;
  }
}

function requireSize(payload, size, what) {
  if (payload.length < size) {
    throw new ProtocolError(`${what} payload too short: ${payload.length} bytes, need ${size}`);
  }
}

// u64 fields (clocks, timestamps) become Numbers: exact below 2^53, which they stay in practice.
function u64(payload, offset) {
  return Number(payload.readBigUInt64LE(offset));
}

function decodeToken({ msgId, payload }) {
  requireSize(payload, 24, 'token');
  const textLen = payload.readUInt16LE(22);
  requireSize(payload, 24 + textLen, 'token');
  const piece = payload.toString('utf8', 24, 24 + textLen); // raw vocabulary piece, spaces as U+2581
  return {
    msgId,
    tokenId: payload.readUInt32LE(0),
    clock: u64(payload, 4),
    layerMask: payload.readBigUInt64LE(12), // a bit mask: kept as BigInt for bitwise use
    tokenType: payload.readUInt8(20),
    piece,
    text: piece.replaceAll('\u2581', ' '),
  };
}

function decodeTurnComplete({ msgId, payload }) {
  requireSize(payload, 16, 'turn complete');
  return {
    msgId,
    totalTok: payload.readUInt32LE(0),
    elapsedMs: payload.readUInt32LE(4),
    tokSec: payload.readFloatLE(8),
    reason: payload.readUInt8(12),
  };
}

function decodeToolCall({ msgId, payload }) {
  requireSize(payload, 4, 'tool call');
  const nameLen = payload.readUInt16LE(2);
  requireSize(payload, 4 + nameLen, 'tool call');
  return {
    msgId,
    callId: payload.readUInt16LE(0),
    toolName: payload.toString('utf8', 4, 4 + nameLen),
    argsJson: payload.toString('utf8', 4 + nameLen), // the model's raw argument text; not necessarily strict JSON
  };
}

function decodeStatus({ msgId, payload }) {
  requireSize(payload, 20, 'status');
  const flags = payload.readUInt16LE(6);
  return {
    msgId,
    status: payload.readUInt8(0),
    isGpu: payload.readUInt8(1) !== 0,
    activeSlots: payload.readUInt16LE(2),
    archivedDiffs: payload.readUInt16LE(4),
    flags,
    isSaturated: (flags & STATUS_FLAG_SATURATED) !== 0,
    tokSec: payload.readFloatLE(8),
    currentTok: payload.readUInt32LE(12),
    totalTok: payload.readUInt32LE(16),
  };
}

function decodeMemResponse({ msgId, payload }) {
  requireSize(payload, 8, 'mem response');
  const count = payload.readUInt8(0);
  requireSize(payload, 8 + 8 * count, 'mem response');
  return {
    msgId,
    count,
    status: payload.readUInt8(1),
    cursor: payload.readUInt16LE(2),
    totalTokens: payload.readUInt32LE(4),
    timestamps: Array.from({ length: count }, (_, i) => u64(payload, 8 + 8 * i)), // ms since the epoch
  };
}

function decodeSnapshotStatus({ msgId, payload }) {
  requireSize(payload, 14, 'snapshot status');
  const idLen = payload.readUInt16LE(12);
  requireSize(payload, 14 + idLen, 'snapshot status');
  return {
    msgId,
    status: payload.readUInt8(0),
    activeSlots: payload.readUInt16LE(2),
    clock: u64(payload, 4),
    streamId: payload.toString('utf8', 14, 14 + idLen),
  };
}

function decodeAutonomicResult({ msgId, payload }) {
  requireSize(payload, 16, 'autonomic result');
  const textLen = payload.readUInt16LE(14);
  requireSize(payload, 16 + textLen, 'autonomic result');
  return {
    msgId,
    winningIdx: payload.readUInt16LE(0),
    confidence: payload.readFloatLE(2), // floats at offsets 2, 6, 10: unaligned on purpose
    entropy: payload.readFloatLE(6),
    costMs: payload.readFloatLE(10),
    text: payload.toString('utf8', 16, 16 + textLen),
  };
}

const DECODERS = new Map([
  [OP_STREAM_CONTENT, ['content', decodeToken]],
  [OP_STREAM_THOUGHT, ['thought', decodeToken]],
  [OP_TURN_COMPLETE, ['turnComplete', decodeTurnComplete]],
  [OP_TOOL_CALL, ['toolCall', decodeToolCall]],
  [OP_STATUS, ['status', decodeStatus]],
  [OP_MEM_RESPONSE, ['memResponse', decodeMemResponse]],
  [OP_SNAPSHOT_STATUS, ['snapshotStatus', decodeSnapshotStatus]],
  [OP_AUTONOMIC_RESULT, ['autonomicResult', decodeAutonomicResult]],
  [OP_PONG, ['pong', ({ msgId }) => ({ msgId })]],
  [OP_ERROR, ['error', ({ msgId, payload }) => ({ msgId, error: payload.toString('utf8'), local: false })]],
]);

/**
 * `{event, data}` for an outbound frame; throws ProtocolError if its payload is malformed.
 * An unknown opcode (e.g. a newer engine's extension) gives event 'unknown' with the raw frame.
 * Payloads longer than the layout are accepted (the extra bytes are ignored): that is how the
 * protocol adds fields without breaking older clients.
 */
export function decodeMessage(frame) {
  const entry = DECODERS.get(frame.opcode);
  if (!entry) return { event: 'unknown', data: { ...frame } };
  const [event, decode] = entry;
  return { event, data: decode(frame) };
}
