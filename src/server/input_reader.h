// The reader side of `serve`: a thread that cuts the input into frames and queues them, and
// the queue the main loop takes them from one at a time. OP_ABORT never waits in the queue: the
// reader sets the session's abort flag at once (out of band), so the running request stops
// within a token.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "engine/session.h"
#include "protocol/frame_reader.h"

namespace channel::server {

// What the reader hands the main loop: a frame, or a stretch of input that was not one.
struct InboundItem {
  std::variant<protocol::Frame, protocol::FrameError> content;
};

class InboundQueue {
 public:
  void push(InboundItem item);
  // No more items; `drop_pending` also forgets the queued ones (the host is gone).
  void close(bool drop_pending);
  // The reader cannot go on: no more items, the queued ones forgotten, and why.
  void fail(std::string reason);
  std::optional<std::string> failure();
  // Waits for the next item; nullopt once closed and empty.
  std::optional<InboundItem> pop();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<InboundItem> items_;
  bool closed_ = false;
  std::optional<std::string> failure_;
};

// The reader thread, reading `fd` until EOF or OP_SHUTDOWN; then it closes the queue (on EOF
// dropping what waits and aborting what runs: the host is gone). Always joined: when serving
// ends before the input does (the output went away, or a failure), the destructor ends its wait
// through a stop pipe, so it never outlives the session and the queue it refers to. A failure
// of its own (an exception) goes to the queue (InboundQueue::failure), never out of the thread.
class InputReader {
 public:
  InputReader(int fd, Session& session, InboundQueue& queue);
  ~InputReader();
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;

 private:
  void close_stop_pipe();

  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace channel::server
