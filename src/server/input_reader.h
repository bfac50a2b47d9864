// The reader side of `serve`: a thread that cuts the input into frames and queues them, and
// the queue the main loop takes them from one at a time. OP_ABORT never waits in the queue: the
// reader sets the session's abort flag at once (out of band), so the running request stops
// within a token.
//
// The queue is bounded (frames and bytes), so a client writing faster than the engine serves
// cannot grow the engine's memory without end. A frame that finds the queue full waits for room
// (back-pressure: the reader stops reading, the pipe fills, the client's writes block) for at
// most `QueueBound::patience`. Room that does not come within it means the main loop is inside a
// long request (a turn decoding); the reader then answers each frame that finds no room with
// OP_ERROR at once and keeps reading, so an ABORT behind a flood still reaches the running
// request within the patience and a token. The first frame that fits ends that refusing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "protocol/frame_reader.h"
#include "server/frame_writer.h"

namespace channel::server {

// What the reader hands the main loop: a frame, or a stretch of input that was not one.
struct InboundItem {
  std::variant<protocol::Frame, protocol::FrameError> content;
};

struct QueueBound {
  size_t frames = 16384;
  // Payload bytes and a fixed cost per item. One frame larger than this (up to the protocol's
  // 64 MiB) is still taken by an empty queue.
  size_t bytes = size_t{64} << 20;
  std::chrono::milliseconds patience{20};
};

// What waits in the queue now and the most that ever waited (for tests and reports).
struct QueueLoad {
  size_t frames = 0, bytes = 0;
  size_t peak_frames = 0, peak_bytes = 0;
};

class InboundQueue {
 public:
  explicit InboundQueue(QueueBound bound = {}) : bound_(bound) {}

  const QueueBound& bound() const { return bound_; }
  // Queues `item` once it fits, waiting at most `patience` for room; false (and `item`
  // untouched) when it still does not fit. A closed queue takes nothing and answers true.
  bool push(InboundItem& item, std::chrono::milliseconds patience);
  // No more items; `drop_pending` also forgets the queued ones (the host is gone).
  void close(bool drop_pending);
  // The reader cannot go on: no more items, the queued ones forgotten, and why.
  void fail(std::string reason);
  std::optional<std::string> failure();
  // Waits for the next item; nullopt once closed and empty.
  std::optional<InboundItem> pop();
  QueueLoad load();

 private:
  bool fits(size_t bytes) const;

  const QueueBound bound_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<InboundItem> items_;
  QueueLoad load_;
  bool closed_ = false;
  std::optional<std::string> failure_;
};

// The reader thread, reading `fd` until EOF or OP_SHUTDOWN; then it closes the queue (on EOF
// dropping what waits and raising `abort_flag`: the host is gone). Refusals of frames that find
// the queue full go straight to `replies`. Always joined: when serving ends before the input
// does (the output went away, or a failure), the destructor ends its wait through a stop pipe,
// so it never outlives the session and the queue it refers to. A failure of its own (an
// exception) goes to the queue (InboundQueue::failure), never out of the thread.
class InputReader {
 public:
  InputReader(int fd, std::atomic<bool>& abort_flag, InboundQueue& queue, FrameWriter& replies);
  ~InputReader();
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;

 private:
  void close_stop_pipe();

  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace channel::server
