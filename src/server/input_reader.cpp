#include "server/input_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "protocol/opcodes.h"

namespace channel::server {
namespace {

namespace p = channel::protocol;

// Reads frames from `fd` until EOF, OP_SHUTDOWN, or a byte on `stop_fd` (serving ended first).
void read_input(int fd, int stop_fd, Session& session, InboundQueue& queue) {
  p::FrameReader reader;
  std::vector<uint8_t> buffer(64 * 1024);
  bool shutting_down = false;
  while (!shutting_down) {
    pollfd waits[2] = {{.fd = fd, .events = POLLIN, .revents = 0}, {.fd = stop_fd, .events = POLLIN, .revents = 0}};
    if (::poll(waits, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "waiting for input");
    }
    if (waits[1].revents != 0) break;
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reader.push(std::span(buffer.data(), static_cast<size_t>(n)));
    while (auto result = reader.pop()) {
      if (auto* frame = std::get_if<p::Frame>(&*result)) {
        if (frame->header.opcode == p::OP_ABORT) {
          session.abort_flag() = true;  // out of band: stops the running request within a token
          continue;
        }
        shutting_down = frame->header.opcode == p::OP_SHUTDOWN;
        queue.push(InboundItem{std::move(*frame)});
        if (shutting_down) break;
      } else {
        queue.push(InboundItem{std::get<p::FrameError>(std::move(*result))});
      }
    }
  }
  // EOF (or a read error): the host is gone. Drop what waits, then abort what runs (in this
  // order, so the main loop cannot start a queued request between the two), and exit promptly.
  // After OP_SHUTDOWN the requests queued before it still run, as in the original.
  queue.close(/*drop_pending=*/!shutting_down);
  if (!shutting_down) session.abort_flag() = true;
}

}  // namespace

void InboundQueue::push(InboundItem item) {
  {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
  }
  ready_.notify_one();
}

void InboundQueue::close(bool drop_pending) {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    if (drop_pending) items_.clear();
  }
  ready_.notify_one();
}

void InboundQueue::fail(std::string reason) {
  {
    std::lock_guard lock(mutex_);
    failure_ = std::move(reason);
  }
  close(/*drop_pending=*/true);
}

std::optional<std::string> InboundQueue::failure() {
  std::lock_guard lock(mutex_);
  return failure_;
}

std::optional<InboundItem> InboundQueue::pop() {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [this] { return closed_ || !items_.empty(); });
  if (items_.empty()) return std::nullopt;
  InboundItem item = std::move(items_.front());
  items_.pop_front();
  return item;
}

InputReader::InputReader(int fd, Session& session, InboundQueue& queue) {
  if (::pipe(stop_pipe_) != 0) throw std::system_error(errno, std::generic_category(), "creating the stop pipe");
  try {
    thread_ = std::thread([fd, stop_fd = stop_pipe_[0], &session, &queue] {
      try {
        read_input(fd, stop_fd, session, queue);
      } catch (const std::exception& e) {
        // An exception may not leave a thread (std::terminate): the main loop reports it.
        queue.fail(e.what());
        session.abort_flag() = true;
      }
    });
  } catch (...) {
    close_stop_pipe();
    throw;
  }
}

InputReader::~InputReader() {
  const uint8_t stop = 1;
  (void)!::write(stop_pipe_[1], &stop, 1);  // a full pipe is already a stop
  thread_.join();
  close_stop_pipe();
}

void InputReader::close_stop_pipe() {
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

}  // namespace channel::server
