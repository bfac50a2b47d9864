#include "server/frame_writer.h"

#include <unistd.h>

#include <cerrno>

namespace channel::server {

FrameWriter::FrameWriter(int fd, size_t capacity, std::function<void()> on_failure)
    : fd_(fd), capacity_(capacity), on_failure_(std::move(on_failure)), thread_([this] { loop(); }) {}

FrameWriter::~FrameWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

void FrameWriter::send(std::vector<uint8_t> frame, OutboundPriority priority) {
  const size_t limit = priority == OutboundPriority::Reader ? 4 * capacity_ : capacity_;
  {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return failed_ || queue_.empty() || queued_bytes_ + frame.size() <= limit; });
    if (failed_) return;
    queued_bytes_ += frame.size();
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
    // The frame leaves the count once written: what waits in the pipe is bounded by the pipe.
    size_t written = 0;
    while (written < frame.size()) {
      const ssize_t n = ::write(fd_, frame.data() + written, frame.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        {
          std::lock_guard lock(mutex_);
          failed_ = true;
          queue_.clear();
          queued_bytes_ = 0;
        }
        if (on_failure_) on_failure_();
        room_.notify_all();
        // Nothing more is written; frames sent from now on are dropped.
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_; });
        return;
      }
      written += static_cast<size_t>(n);
    }
    {
      std::lock_guard lock(mutex_);
      queued_bytes_ -= frame.size();
    }
    room_.notify_all();
  }
}

}  // namespace channel::server
