// Process-owning client for a Channel engine started with `--serve`.
//
// The engine is a child process speaking frames on its stdin/stdout; its stderr (human logs)
// is passed through. Every outbound frame is decoded (see framing.js) and emitted as an event
// on this EventEmitter. The promise helpers `waitFor`, `waitReady`, `collectTurn` and `probe`
// observe the same events; they see only events emitted after they are called (except
// `waitReady`, which remembers the startup status), so call them right after sending.

import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';

import * as framing from './framing.js';
import {
  INPUT_FLAG_DIRECT,
  INPUT_FLAG_RAW,
  INPUT_FLAG_REASON,
  MAX_PAYLOAD,
  RESUME_ACTION_CLOSE_THOUGHT,
  RESUME_ACTION_CONTINUE,
} from './protocol.js';

/** The engine process ended while the caller was waiting for (or writing to) it. */
export class EngineExitedError extends Error {
  name = 'EngineExitedError';

  constructor({ code, signal }) {
    let message = `engine exited with code ${code}`;
    if (signal) message = `engine killed by ${signal}`;
    else if (code == null) message = 'engine input is closed';
    super(message);
    this.code = code;
    this.signal = signal;
  }
}

function timeoutError(timeoutMs) {
  const error = new Error(`no reply within ${timeoutMs} ms`);
  error.name = 'TimeoutError';
  return error;
}

/**
 * What arrived while waiting for one TURN_COMPLETE: `events` in arrival order (including
 * other msgIds), and content, thought and tool calls of the turn's own msgId (any if null).
 */
function makeTurn(msgId, events, complete) {
  const mine = (name) => events.filter((e) => e.event === name && (msgId == null || e.data.msgId === msgId));
  return {
    msgId,
    events,
    complete,
    reason: complete.reason,
    content: mine('content').map((e) => e.data.text).join(''),
    thought: mine('thought').map((e) => e.data.text).join(''),
    toolCalls: mine('toolCall').map((e) => e.data),
  };
}

/**
 * Drives one engine process. Runs `binaryPath --model modelPath --serve ...extraArgs`;
 * `binaryPath` may also be an argv prefix such as `[process.execPath, 'fake.js']` (for
 * interpreters and wrappers like `taskset`).
 *
 * Events (data objects carry `msgId`): content, thought, toolCall, turnComplete, status,
 * snapshotStatus, autonomicResult, memResponse, pong, error, unknown, drain, exit.
 * As with any EventEmitter, an 'error' event without a listener throws.
 */
export class Client extends EventEmitter {
  #child = null;
  #reader;
  #nextId = 1;
  #observers = new Set();
  #exited;
  #resolveExited;

  constructor({ binaryPath, modelPath, extraArgs = [], stderr = 'inherit', maxPayload = MAX_PAYLOAD } = {}) {
    super();
    const prefix = Array.isArray(binaryPath) ? binaryPath : [binaryPath];
    this.argv = [...prefix, '--model', modelPath, '--serve', ...extraArgs];
    this.stderr = stderr;
    this.config = { ...framing.DEFAULT_CONFIG }; // last configuration sent; setConfig() updates it
    this.readyStatus = null; // the startup STATUS (msgId 0) once it arrived
    this.exitInfo = null; // {code, signal} once the process ended
    this.#reader = new framing.FrameReader({ maxPayload });
    this.#exited = new Promise((resolve) => {
      this.#resolveExited = resolve;
    });
  }

  // -- lifecycle ------------------------------------------------------------------------------

  start() {
    if (this.#child) throw new Error('client already started');
    const [command, ...args] = this.argv;
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', this.stderr] });
    this.#child = child;
    child.stdout.on('data', (chunk) => this.#onData(chunk));
    // EPIPE after the engine died: the 'exit' event reports the cause, writes throw EngineExitedError.
    child.stdin.on('error', () => {});
    child.on('error', (error) => this.#deliver('error', { msgId: 0, error: error.message, local: true }));
    // 'close' (not 'exit') fires after stdout is drained, so every frame is emitted before 'exit'.
    child.on('close', (code, signal) => this.#onClose(code, signal));
    return this;
  }

  get pid() {
    return this.#child?.pid;
  }

  /**
   * Sends SHUTDOWN, closes stdin, waits up to `timeoutMs`, then kills. Resolves to {code, signal}.
   * The wait matters: the engine writes its episodic store back to disk on exit.
   */
  async shutdown({ timeoutMs = 5000 } = {}) {
    if (!this.#child) return null;
    if (!this.exitInfo) {
      try {
        this.#send(framing.shutdownFrame);
      } catch (error) {
        if (!(error instanceof EngineExitedError)) throw error;
      }
      this.#child.stdin.end();
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs);
      await this.#exited;
      clearTimeout(timer);
    }
    return this.exitInfo;
  }

  /** Ends the engine immediately (SIGKILL). Resolves to {code, signal}. */
  async kill() {
    if (!this.#child) return null;
    this.#child.kill('SIGKILL');
    return this.#exited;
  }

  // -- waiting -------------------------------------------------------------------------------

  /**
   * Resolves with the first later event `{event, data}` for which `predicate` is true.
   * Rejects with EngineExitedError if the process ends first, TimeoutError after `timeoutMs`.
   */
  waitFor(predicate, { timeoutMs } = {}) {
    return new Promise((resolve, reject) => {
      if (this.exitInfo) {
        reject(new EngineExitedError(this.exitInfo));
        return;
      }
      let timer;
      const finish = (settle, value) => {
        clearTimeout(timer);
        this.#observers.delete(observe);
        settle(value);
      };
      const observe = (event, data) => {
        try {
          if (predicate({ event, data })) finish(resolve, { event, data });
          else if (event === 'exit') finish(reject, new EngineExitedError(data));
        } catch (error) {
          finish(reject, error);
        }
      };
      this.#observers.add(observe);
      if (timeoutMs !== undefined) timer = setTimeout(() => finish(reject, timeoutError(timeoutMs)), timeoutMs);
    });
  }

  /** Resolves with the unsolicited startup STATUS (msgId 0) the engine sends once loaded. */
  async waitReady({ timeoutMs } = {}) {
    if (this.readyStatus) return this.readyStatus;
    const { data } = await this.waitFor(({ event, data }) => event === 'status' && data.msgId === 0, { timeoutMs });
    return data;
  }

  /**
   * Resolves with the turn that ends at the TURN_COMPLETE for `msgId` (any msgId if null):
   * {msgId, events, complete, reason, content, thought, toolCalls}. A turn ends at END_OF_TURN,
   * MAX_TOKENS, ABORTED, TOOL_CALL or ELASTIC_YIELD; after an elastic yield call sendResume()
   * and collect again with its msgId.
   */
  async collectTurn(msgId = null, { timeoutMs } = {}) {
    const events = [];
    const { data } = await this.waitFor(
      (entry) => {
        events.push(entry);
        return entry.event === 'turnComplete' && (msgId == null || entry.data.msgId === msgId);
      },
      { timeoutMs },
    );
    return makeTurn(msgId, events, data);
  }

  // -- requests (each returns the msgId it used) --------------------------------------------

  /**
   * A user turn. `opts`: a number (raw flags) or {flags, direct, reason, raw, tokens};
   * with `tokens` (u32 ids) the text must be empty.
   */
  sendInput(text = '', opts = {}) {
    const { flags = 0, direct = false, reason = false, raw = false, tokens = null } =
      typeof opts === 'number' ? { flags: opts } : opts;
    const allFlags =
      flags | (direct ? INPUT_FLAG_DIRECT : 0) | (reason ? INPUT_FLAG_REASON : 0) | (raw ? INPUT_FLAG_RAW : 0);
    return this.#send(framing.streamInputFrame, text, allFlags, tokens);
  }

  /** Continues after an ELASTIC_YIELD. `opts`: a number (action) or {closeThought}. */
  sendResume(opts = {}) {
    const action =
      typeof opts === 'number' ? opts : opts.closeThought ? RESUME_ACTION_CLOSE_THOUGHT : RESUME_ACTION_CONTINUE;
    return this.#send(framing.resumeFrame, action);
  }

  sendProbeAutonomic(prompt, candidates = [], maxDecodeTokens = 1, minCertainty = 0.6) {
    return this.#send(framing.probeAutonomicFrame, prompt, candidates, maxDecodeTokens, minCertainty);
  }

  /**
   * Sends a probe and resolves with its autonomicResult data (matched by msgId). The engine
   * silently drops malformed probes, hence the timeout. The result is also emitted as an event.
   */
  async probe(prompt, candidates = [], maxDecodeTokens = 1, minCertainty = 0.6, { timeoutMs = 30000 } = {}) {
    // Subscribing right after the synchronous send cannot miss the reply: frames are only
    // processed once this call has returned to the event loop.
    const msgId = this.sendProbeAutonomic(prompt, candidates, maxDecodeTokens, minCertainty);
    const { data } = await this.waitFor(
      ({ event, data }) => event === 'autonomicResult' && data.msgId === msgId,
      { timeoutMs },
    );
    return data;
  }

  /** System prompt: an object {instructions, tools} is sent as JSON, a string verbatim. */
  sendSystem(system) {
    return this.#send(framing.setSystemFrame, typeof system === 'string' ? system : JSON.stringify(system));
  }

  /** Result of a tool call; non-string results are sent as JSON. */
  sendToolReturn(toolName, result, callId = 1, status = 0) {
    const text = typeof result === 'string' ? result : JSON.stringify(result);
    return this.#send(framing.toolReturnFrame, toolName, text, callId, status);
  }

  sendSnapshotSave(path, streamId = '') {
    return this.#send(framing.snapshotSaveFrame, path, streamId);
  }

  sendSnapshotLoad(path) {
    return this.#send(framing.snapshotLoadFrame, path);
  }

  sendAbort() {
    return this.#send(framing.abortFrame);
  }

  sendMemQuery(query, topK = 5) {
    return this.#send(framing.memQueryFrame, query, topK);
  }

  sendMemCommit() {
    return this.#send(framing.memCommitFrame);
  }

  /**
   * Updates the given DEFAULT_CONFIG fields (`budget` is accepted for thinkingBudget) and
   * sends the whole 41-byte configuration. Fields not given keep their previous value
   * (initially the original client's defaults); unknown names throw TypeError.
   */
  setConfig(fields = {}) {
    const { budget, ...rest } = fields;
    const updates = budget === undefined ? rest : { thinkingBudget: budget, ...rest };
    for (const name of Object.keys(updates)) {
      if (!(name in framing.DEFAULT_CONFIG)) throw new TypeError(`unknown config field ${name}`);
    }
    const config = { ...this.config, ...updates };
    const msgId = this.#send(framing.configFrame, config);
    this.config = config;
    return msgId;
  }

  ping() {
    return this.#send(framing.pingFrame);
  }

  /**
   * Writes `bytes` (a Buffer or Uint8Array) to the engine's stdin as they are: no framing and
   * no msgId of this client's sequence. For robustness tests (malformed frames, garbage between
   * frames); a frame sent this way that gets a reply should carry a msgId the client is not
   * using (see #send: ids run 1, 2, 3, ...).
   */
  sendRaw(bytes) {
    this.#writable().write(bytes);
  }

  /**
   * Closes the engine's stdin without OP_SHUTDOWN: the engine sees EOF (it aborts what runs,
   * drops what waits and exits). Resolves to {code, signal} once the process has ended.
   */
  closeInput() {
    if (!this.#child) throw new Error('client not started');
    this.#child.stdin.end();
    return this.#exited;
  }

  // -- internals -----------------------------------------------------------------------------

  /** The engine's stdin; throws if the engine was not started, has exited or its input is closed. */
  #writable() {
    if (!this.#child) throw new Error('client not started');
    if (this.exitInfo || !this.#child.stdin.writable) {
      throw new EngineExitedError(this.exitInfo ?? { code: null, signal: null });
    }
    return this.#child.stdin;
  }

  #send(encode, ...args) {
    const stdin = this.#writable();
    const msgId = this.#nextId;
    // Ids wrap within 1..65535: 0 is reserved for unsolicited engine frames.
    this.#nextId = (msgId % 0xffff) + 1;
    stdin.write(encode(msgId, ...args));
    return msgId;
  }

  #onData(chunk) {
    const skippedBefore = this.#reader.skipped;
    const frames = this.#reader.push(chunk);
    if (this.#reader.skipped !== skippedBefore) {
      const skipped = this.#reader.skipped - skippedBefore;
      this.#deliver('error', { msgId: 0, error: `skipped ${skipped} bytes of non-frame data on stdout`, local: true });
    }
    for (const frame of frames) {
      let message;
      try {
        message = framing.decodeMessage(frame);
      } catch (error) {
        if (!(error instanceof framing.ProtocolError)) throw error;
        const text = `malformed frame 0x${frame.opcode.toString(16).padStart(4, '0')}: ${error.message}`;
        message = { event: 'error', data: { msgId: frame.msgId, error: text, local: true } };
      }
      if (message.event === 'status' && message.data.msgId === 0) this.readyStatus ??= message.data;
      this.#deliver(message.event, message.data);
    }
    this.emit('drain');
  }

  #onClose(code, signal) {
    if (this.#reader.pending) {
      const text = `stdout closed inside a frame (${this.#reader.pending} bytes)`;
      this.#deliver('error', { msgId: 0, error: text, local: true });
    }
    this.exitInfo = { code, signal };
    this.#deliver('exit', this.exitInfo);
    this.#resolveExited(this.exitInfo);
  }

  #deliver(event, data) {
    for (const observe of [...this.#observers]) observe(event, data);
    this.emit(event, data);
  }
}
