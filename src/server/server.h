// `channel --serve`: the original Channel wire protocol on stdin/stdout. Three threads: a
// reader that cuts the input into frames (handling OP_ABORT at once, out of band), the main
// loop that runs one request at a time on the session, and a writer (FrameWriter).
//
// Every malformed frame is answered with OP_ERROR carrying its msg_id and a reason, and the
// session stays as it was; the engine then keeps serving. A request that fails (out of memory,
// say) is answered with OP_ERROR too, and serving goes on. EOF on stdin or OP_SHUTDOWN ends the
// loop: the current request is aborted and the process exits with code 0. What cannot be
// recovered from (an exception of unknown type, the input reader failing) ends serving with a
// message on stderr and code 1, never an abort.
#pragma once

#include "engine/session.h"
#include "server/snapshot_paths.h"

namespace channel::server {

struct ServerOptions {
  int input_fd = 0;
  int output_fd = 1;
  bool is_gpu = false;
  // Channel extension: OP_TOOL_CALL carries the arguments as JSON (when the model's notation
  // converts) instead of the model's notation.
  bool tool_call_json = false;
  // Channel extension (--snapshot-dir): where SNAPSHOT_SAVE / SNAPSHOT_LOAD paths may lead.
  SnapshotPaths snapshot_paths;
};

// Serves until EOF or OP_SHUTDOWN; returns the process exit code.
int serve(Session& session, const ServerOptions& options);

}  // namespace channel::server
