// Node.js client for the Channel engine's stdin/stdout frame protocol (no dependencies).
export { Client, EngineExitedError } from './client.js';
export * from './framing.js';
export * from './protocol.js';
