// Wire constants of the Channel protocol (magic, opcodes, enumerations).
//
// Values follow the original engine's code (reference/original-channel.md §1.2-§1.4), which
// is what existing clients rely on where its prose documentation disagrees.
// Kept name-for-name identical to clients/python/channel_client/protocol.py.

export const MAGIC = 0x53554C58; // on the wire: 58 4C 55 53 ("XLUS")
export const VERSION = 1;
export const HEADER_SIZE = 16;
// The original docs cap payloads at 64 MiB; the reader treats anything larger as garbage.
export const MAX_PAYLOAD = 64 * 1024 * 1024;

// Inbound opcodes (host -> engine)
export const OP_STREAM_INPUT = 0x0001;
export const OP_ABORT = 0x0002;
export const OP_MEM_QUERY = 0x0003;
export const OP_SET_CONFIG = 0x0004;
export const OP_TOOL_RETURN = 0x0005;
export const OP_MEM_COMMIT = 0x0006;
export const OP_SET_SYSTEM = 0x0007;
export const OP_SNAPSHOT_SAVE = 0x0008;
export const OP_SNAPSHOT_LOAD = 0x0009;
export const OP_RESUME = 0x000A;
export const OP_PING = 0x000E;
export const OP_SHUTDOWN = 0x000F;
export const OP_PROBE_AUTONOMIC = 0x0012;

// Outbound opcodes (engine -> host)
export const OP_STREAM_CONTENT = 0x0101;
export const OP_STREAM_THOUGHT = 0x0102;
export const OP_TURN_COMPLETE = 0x0103;
export const OP_TOOL_CALL = 0x0104;
export const OP_MEM_RESPONSE = 0x0105;
export const OP_STATUS = 0x0106;
export const OP_SNAPSHOT_STATUS = 0x0107;
export const OP_AUTONOMIC_RESULT = 0x010C;
export const OP_PONG = 0x010E;
export const OP_ERROR = 0x01FF;

// STREAM_INPUT byte 0: input mode. Only text and token ids are implemented by engines.
export const MODE_TEXT = 0x00;
export const MODE_TOKENS = 0x01;

// STREAM_INPUT byte 1: flags.
export const INPUT_FLAG_NONE = 0x00;
export const INPUT_FLAG_DIRECT = 0x01; // accepted but ignored by the original engine
export const INPUT_FLAG_REASON = 0x02; // allow the thought channel for this turn
export const INPUT_FLAG_RAW = 0x80; // text is tokenized verbatim, no turn template

// RESUME action byte.
export const RESUME_ACTION_CONTINUE = 0x00;
export const RESUME_ACTION_CLOSE_THOUGHT = 0x01;

// Token frame token_type (the original only ever sends TEXT).
export const TOKEN_TYPE_TEXT = 0x00;

// TURN_COMPLETE stop reason.
export const STOP_END_OF_TURN = 0x00;
export const STOP_MAX_TOKENS = 0x01;
export const STOP_ABORTED = 0x02;
export const STOP_TOOL_CALL = 0x03;
export const STOP_ELASTIC_YIELD = 0x04; // the engine holds a token; send RESUME or new input

// STATUS byte 0.
export const STATUS_IDLE = 0;
export const STATUS_ENCODING = 1;
export const STATUS_GENERATING = 2;

// STATUS flags (u16 at offset 6).
export const STATUS_FLAG_SATURATED = 0x0001;

// SNAPSHOT_STATUS byte 0.
export const SNAPSHOT_STATUS_SAVED = 0;
export const SNAPSHOT_STATUS_LOADED = 1;
export const SNAPSHOT_STATUS_EXISTS = 2;

// MEM_RESPONSE byte 1.
export const MEM_STATUS_OK = 0x00;
export const MEM_STATUS_NO_MATCH = 0x01;
