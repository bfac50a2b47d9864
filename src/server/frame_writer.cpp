#include "server/frame_writer.h"

#include <unistd.h>

#include <cerrno>

namespace channel::server {

FrameWriter::FrameWriter(int fd) : fd_(fd), thread_([this] { loop(); }) {}

FrameWriter::~FrameWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

void FrameWriter::send(std::vector<uint8_t> frame) {
  {
    std::lock_guard lock(mutex_);
    if (failed_) return;
    queue_.push_back(std::move(frame));
  }
  ready_.notify_one();
}

bool FrameWriter::failed() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

void FrameWriter::loop() {
  while (true) {
    std::vector<uint8_t> frame;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      frame = std::move(queue_.front());
      queue_.pop_front();
    }
    size_t written = 0;
    while (written < frame.size()) {
      const ssize_t n = ::write(fd_, frame.data() + written, frame.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::lock_guard lock(mutex_);
        failed_ = true;
        queue_.clear();
        break;
      }
      written += static_cast<size_t>(n);
    }
  }
}

}  // namespace channel::server
