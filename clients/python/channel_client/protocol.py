"""Wire constants of the Channel protocol (magic, opcodes, enumerations).

Values follow the original engine's code (reference/original-channel.md §1.2-§1.4), which
is what existing clients rely on where its prose documentation disagrees.
"""

MAGIC = 0x53554C58  # on the wire: 58 4C 55 53 ("XLUS")
VERSION = 1
HEADER_SIZE = 16
# The original docs cap payloads at 64 MiB; the reader treats anything larger as garbage.
MAX_PAYLOAD = 64 * 1024 * 1024

# Inbound opcodes (host -> engine)
OP_STREAM_INPUT = 0x0001
OP_ABORT = 0x0002
OP_MEM_QUERY = 0x0003
OP_SET_CONFIG = 0x0004
OP_TOOL_RETURN = 0x0005
OP_MEM_COMMIT = 0x0006
OP_SET_SYSTEM = 0x0007
OP_SNAPSHOT_SAVE = 0x0008
OP_SNAPSHOT_LOAD = 0x0009
OP_RESUME = 0x000A
OP_PING = 0x000E
OP_SHUTDOWN = 0x000F
OP_PROBE_AUTONOMIC = 0x0012

# Outbound opcodes (engine -> host)
OP_STREAM_CONTENT = 0x0101
OP_STREAM_THOUGHT = 0x0102
OP_TURN_COMPLETE = 0x0103
OP_TOOL_CALL = 0x0104
OP_MEM_RESPONSE = 0x0105
OP_STATUS = 0x0106
OP_SNAPSHOT_STATUS = 0x0107
OP_AUTONOMIC_RESULT = 0x010C
OP_PONG = 0x010E
OP_ERROR = 0x01FF

# STREAM_INPUT byte 0: input mode. Only text and token ids are implemented by engines.
MODE_TEXT = 0x00
MODE_TOKENS = 0x01

# STREAM_INPUT byte 1: flags.
INPUT_FLAG_NONE = 0x00
INPUT_FLAG_DIRECT = 0x01  # accepted but ignored by the original engine
INPUT_FLAG_REASON = 0x02  # allow the thought channel for this turn
INPUT_FLAG_RAW = 0x80  # text is tokenized verbatim, no turn template

# RESUME action byte.
RESUME_ACTION_CONTINUE = 0x00
RESUME_ACTION_CLOSE_THOUGHT = 0x01

# Token frame token_type (the original only ever sends TEXT).
TOKEN_TYPE_TEXT = 0x00

# TURN_COMPLETE stop reason.
STOP_END_OF_TURN = 0x00
STOP_MAX_TOKENS = 0x01
STOP_ABORTED = 0x02
STOP_TOOL_CALL = 0x03
STOP_ELASTIC_YIELD = 0x04  # the engine holds a token; send RESUME or new input

# STATUS byte 0.
STATUS_IDLE = 0
STATUS_ENCODING = 1
STATUS_GENERATING = 2

# STATUS flags (u16 at offset 6).
STATUS_FLAG_SATURATED = 0x0001

# SNAPSHOT_STATUS byte 0.
SNAPSHOT_STATUS_SAVED = 0
SNAPSHOT_STATUS_LOADED = 1
SNAPSHOT_STATUS_EXISTS = 2

# MEM_RESPONSE byte 1.
MEM_STATUS_OK = 0x00
MEM_STATUS_NO_MATCH = 0x01
