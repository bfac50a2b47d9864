// The writer thread: frames are queued whole by whoever produces them and written to the
// output descriptor in order, so frames are never interleaved and a slow reader on the other
// side does not stall decoding until `capacity` bytes of frames wait. Then the session waits for
// room (OutboundPriority::Session): memory stays bounded when the client stops reading. The
// input reader's own replies (refusals of a flood) wait only beyond four times that
// (OutboundPriority::Reader), so the reader keeps taking input, OP_ABORT included, while the
// session waits; a client that floods and never reads is eventually not read from either.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace channel::server {

enum class OutboundPriority { Session, Reader };

class FrameWriter {
 public:
  static constexpr size_t kDefaultCapacity = size_t{64} << 20;  // bytes queued before the session waits

  // `on_failure` runs once, on the writer thread, when the other side goes away (serve stops
  // the running request and the input there: nobody is listening).
  explicit FrameWriter(int fd, size_t capacity = kDefaultCapacity, std::function<void()> on_failure = {});
  ~FrameWriter();  // writes what is queued, then stops
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  // Queues `frame`, first waiting while the queue holds more than its priority's limit (a frame
  // is always taken into an empty queue). Dropped once the other side has gone away.
  void send(std::vector<uint8_t> frame, OutboundPriority priority = OutboundPriority::Session);
  bool failed() const;  // the other side went away (EPIPE and the like)

 private:
  void loop();

  int fd_;
  size_t capacity_;
  std::function<void()> on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a frame is queued, or stopping
  std::condition_variable room_;   // a frame was written, or the other side went away
  std::deque<std::vector<uint8_t>> queue_;
  size_t queued_bytes_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace channel::server
