#include "protocol/opcodes.h"

#include <fmt/format.h>

namespace channel::protocol {

std::string opcode_name(uint16_t opcode) {
  switch (opcode) {
    case OP_STREAM_INPUT: return "OP_STREAM_INPUT";
    case OP_ABORT: return "OP_ABORT";
    case OP_MEM_QUERY: return "OP_MEM_QUERY";
    case OP_SET_CONFIG: return "OP_SET_CONFIG";
    case OP_TOOL_RETURN: return "OP_TOOL_RETURN";
    case OP_MEM_COMMIT: return "OP_MEM_COMMIT";
    case OP_SET_SYSTEM: return "OP_SET_SYSTEM";
    case OP_SNAPSHOT_SAVE: return "OP_SNAPSHOT_SAVE";
    case OP_SNAPSHOT_LOAD: return "OP_SNAPSHOT_LOAD";
    case OP_RESUME: return "OP_RESUME";
    case OP_PING: return "OP_PING";
    case OP_SHUTDOWN: return "OP_SHUTDOWN";
    case OP_PROBE_AUTONOMIC: return "OP_PROBE_AUTONOMIC";
    case OP_STREAM_CONTENT: return "OP_STREAM_CONTENT";
    case OP_STREAM_THOUGHT: return "OP_STREAM_THOUGHT";
    case OP_TURN_COMPLETE: return "OP_TURN_COMPLETE";
    case OP_TOOL_CALL: return "OP_TOOL_CALL";
    case OP_MEM_RESPONSE: return "OP_MEM_RESPONSE";
    case OP_STATUS: return "OP_STATUS";
    case OP_SNAPSHOT_STATUS: return "OP_SNAPSHOT_STATUS";
    case OP_AUTONOMIC_RESULT: return "OP_AUTONOMIC_RESULT";
    case OP_PONG: return "OP_PONG";
    case OP_ERROR: return "OP_ERROR";
  }
  return fmt::format("opcode 0x{:04X}", opcode);
}

}  // namespace channel::protocol
