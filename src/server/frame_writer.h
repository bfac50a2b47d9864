// The writer thread: frames are queued whole by whoever produces them and written to the
// output descriptor in order, so a slow reader on the other side never stalls decoding and
// frames are never interleaved.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace channel::server {

class FrameWriter {
 public:
  explicit FrameWriter(int fd);
  ~FrameWriter();  // writes what is queued, then stops
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;

  void send(std::vector<uint8_t> frame);
  bool failed() const;  // the other side went away (EPIPE and the like)

 private:
  void loop();

  int fd_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::vector<uint8_t>> queue_;
  bool stopping_ = false;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace channel::server
