#include "server/input_reader.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

#include "protocol/opcodes.h"
#include "protocol/outbound.h"

namespace channel::server {
namespace {

namespace p = channel::protocol;

// What an item costs the queue's byte bound: its payload and a fixed share for the bookkeeping.
size_t cost(const InboundItem& item) {
  const auto* frame = std::get_if<p::Frame>(&item.content);
  return sizeof(InboundItem) + (frame ? frame->payload.size() : 0);
}

uint16_t msg_id(const InboundItem& item) {
  if (const auto* frame = std::get_if<p::Frame>(&item.content)) return frame->header.msg_id;
  return std::get<p::FrameError>(item.content).msg_id;
}

// Queues the reader's items under the bound: back-pressure while the main loop takes items,
// refusals while it is stuck in one long request (see input_reader.h).
class BoundedOffer {
 public:
  BoundedOffer(InboundQueue& queue, FrameWriter& replies) : queue_(queue), replies_(replies) {}

  void operator()(InboundItem item) {
    const auto patience = refusing_ ? std::chrono::milliseconds(0) : queue_.bound().patience;
    refusing_ = !queue_.push(item, patience);
    if (refusing_) {
      replies_.send(p::encode_frame(msg_id(item), p::ErrorMessage{refusal(item)}), OutboundPriority::Reader);
    }
  }

 private:
  std::string refusal(const InboundItem& item) {
    // A frame that was not one is answered with its own reason, as the main loop would.
    if (const auto* error = std::get_if<p::FrameError>(&item.content)) return error->reason;
    const QueueLoad load = queue_.load();
    return fmt::format("the engine is busy: {} requests ({} bytes) wait for the one running; request refused",
                       load.frames, load.bytes);
  }

  InboundQueue& queue_;
  FrameWriter& replies_;
  bool refusing_ = false;
};

// Reads frames from `fd` until EOF, OP_SHUTDOWN, or a byte on `stop_fd` (serving ended first).
void read_input(int fd, int stop_fd, std::atomic<bool>& abort_flag, InboundQueue& queue, FrameWriter& replies) {
  p::FrameReader reader;
  BoundedOffer offer(queue, replies);
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
          abort_flag = true;  // out of band: stops the running request within a token
          continue;
        }
        // OP_SHUTDOWN needs no room: closing the queue below ends serving after the queued
        // requests, as reaching OP_SHUTDOWN in the queue does.
        shutting_down = frame->header.opcode == p::OP_SHUTDOWN;
        if (shutting_down) break;
        offer(InboundItem{std::move(*frame)});
      } else {
        offer(InboundItem{std::get<p::FrameError>(std::move(*result))});
      }
    }
  }
  // EOF (or a read error): the host is gone. Drop what waits, then abort what runs (in this
  // order, so the main loop cannot start a queued request between the two), and exit promptly.
  // After OP_SHUTDOWN the requests queued before it still run, as in the original.
  queue.close(/*drop_pending=*/!shutting_down);
  if (!shutting_down) abort_flag = true;
}

}  // namespace

bool InboundQueue::fits(size_t bytes) const {
  if (items_.empty()) return true;
  return items_.size() < bound_.frames && load_.bytes + bytes <= bound_.bytes;
}

bool InboundQueue::push(InboundItem& item, std::chrono::milliseconds patience) {
  const size_t bytes = cost(item);
  {
    std::unique_lock lock(mutex_);
    if (!room_.wait_for(lock, patience, [&] { return closed_ || fits(bytes); })) return false;
    if (closed_) return true;
    items_.push_back(std::move(item));
    load_.frames = items_.size();
    load_.bytes += bytes;
    load_.peak_frames = std::max(load_.peak_frames, load_.frames);
    load_.peak_bytes = std::max(load_.peak_bytes, load_.bytes);
  }
  ready_.notify_one();
  return true;
}

void InboundQueue::close(bool drop_pending) {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    if (drop_pending) {
      items_.clear();
      load_.frames = load_.bytes = 0;
    }
  }
  ready_.notify_one();
  room_.notify_one();
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
  std::optional<InboundItem> item;
  {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    item = std::move(items_.front());
    items_.pop_front();
    load_.frames = items_.size();
    load_.bytes -= cost(*item);
  }
  room_.notify_one();
  return item;
}

QueueLoad InboundQueue::load() {
  std::lock_guard lock(mutex_);
  return load_;
}

InputReader::InputReader(int fd, std::atomic<bool>& abort_flag, InboundQueue& queue, FrameWriter& replies) {
  if (::pipe(stop_pipe_) != 0) throw std::system_error(errno, std::generic_category(), "creating the stop pipe");
  try {
    thread_ = std::thread([fd, stop_fd = stop_pipe_[0], &abort_flag, &queue, &replies] {
      try {
        read_input(fd, stop_fd, abort_flag, queue, replies);
      } catch (const std::exception& e) {
        // An exception may not leave a thread (std::terminate): the main loop reports it.
        queue.fail(e.what());
        abort_flag = true;
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
