// The bounded inbound queue behind `serve`'s reader thread, over pipes and without a model: a
// flood while the main loop takes nothing stays within the bound, the frames beyond it are each
// refused with OP_ERROR, and an ABORT behind the flood still raises the abort flag at once; a
// flood while the main loop takes frames waits for room (back-pressure) and loses nothing.
#include "server/input_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "protocol/frame_reader.h"
#include "protocol/inbound.h"
#include "protocol/outbound.h"

namespace channel::server {
namespace {

namespace p = channel::protocol;
using namespace std::chrono_literals;

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    if (::pipe(fds) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  }
  ~Pipe() {
    close_write();
    ::close(fds[0]);
  }
  int read_end() const { return fds[0]; }
  int write_end() const { return fds[1]; }
  void close_write() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
};

void write_all(int fd, const std::vector<uint8_t>& bytes) {
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    ASSERT_GT(n, 0);
    at += static_cast<size_t>(n);
  }
}

// Request `i` of a flood: PINGs, and every fourth one an INPUT of 8 KiB of text.
p::InboundMessage flood_request(int i) {
  if (i % 4 == 0) return p::StreamInput{.mode = p::MODE_TEXT, .text = std::string(8 * 1024, 'x')};
  return p::Ping{};
}

// The msg_ids of the OP_ERROR replies on `fd`, until it ends.
std::vector<uint16_t> refused_ids(int fd) {
  p::FrameReader reader;
  std::vector<uint16_t> ids;
  uint8_t buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
    reader.push(std::span(buffer, static_cast<size_t>(n)));
    while (auto result = reader.pop()) {
      const auto& frame = std::get<p::Frame>(*result);
      EXPECT_EQ(frame.header.opcode, p::OP_ERROR);
      ids.push_back(frame.header.msg_id);
    }
  }
  return ids;
}

uint16_t popped_id(InboundQueue& queue) {
  const auto item = queue.pop();
  EXPECT_TRUE(item.has_value());
  return item ? std::get<p::Frame>(item->content).header.msg_id : 0;
}

constexpr int kFlood = 4000;

TEST(InboundQueue, AFloodWhileTheMainLoopIsStuckStaysBoundedIsRefusedBeyondTheBoundAndAnAbortBehindItActs) {
  const QueueBound bound{.frames = 8, .bytes = 32 * 1024, .patience = 20ms};
  Pipe input, output;
  std::atomic<bool> abort_flag = false;
  InboundQueue queue(bound);
  std::vector<uint16_t> refused;
  std::set<uint16_t> answered;
  std::thread collector([&] { refused = refused_ids(output.read_end()); });
  {
    FrameWriter writer(output.write_end());
    InputReader reader(input.read_end(), abort_flag, queue, writer);
    for (int i = 1; i <= kFlood; ++i) write_all(input.write_end(), p::encode_frame(i, flood_request(i)));
    write_all(input.write_end(), p::encode_frame(kFlood + 1, p::Abort{}));
    const auto abort_sent = std::chrono::steady_clock::now();
    while (!abort_flag && std::chrono::steady_clock::now() - abort_sent < 5s) std::this_thread::sleep_for(1ms);
    EXPECT_TRUE(abort_flag) << "the ABORT behind the flood was not acted on";
    EXPECT_LT(std::chrono::steady_clock::now() - abort_sent, 1s);

    const QueueLoad load = queue.load();
    EXPECT_LE(load.peak_frames, bound.frames);
    EXPECT_LE(load.peak_bytes, bound.bytes);
    for (size_t i = 0; i < load.frames; ++i) answered.insert(popped_id(queue));
    input.close_write();  // EOF: the reader ends
  }
  output.close_write();
  collector.join();
  // Every request of the flood either waits in the queue or was refused, once.
  std::set<uint16_t> all(refused.begin(), refused.end());
  EXPECT_EQ(all.size(), refused.size()) << "a request was refused twice";
  all.insert(answered.begin(), answered.end());
  EXPECT_EQ(all.size(), refused.size() + answered.size()) << "a request was queued and refused";
  EXPECT_EQ(all.size(), size_t{kFlood});
}

TEST(InboundQueue, AFloodWhileTheMainLoopTakesFramesWaitsForRoomAndLosesNothing) {
  const QueueBound bound{.frames = 4, .bytes = 32 * 1024, .patience = 5s};
  constexpr int kFrames = 200;
  Pipe input, output;
  std::atomic<bool> abort_flag = false;
  InboundQueue queue(bound);
  std::vector<uint16_t> refused;
  std::thread collector([&] { refused = refused_ids(output.read_end()); });
  {
    FrameWriter writer(output.write_end());
    InputReader reader(input.read_end(), abort_flag, queue, writer);
    std::thread flood([&] {
      for (int i = 1; i <= kFrames; ++i) write_all(input.write_end(), p::encode_frame(i, flood_request(i)));
    });
    for (int i = 1; i <= kFrames; ++i) {
      EXPECT_EQ(popped_id(queue), i);
      std::this_thread::sleep_for(1ms);  // a main loop slower than the client
    }
    flood.join();
    EXPECT_LE(queue.load().peak_frames, bound.frames);
    EXPECT_LE(queue.load().peak_bytes, bound.bytes);
    input.close_write();
  }
  output.close_write();
  collector.join();
  EXPECT_TRUE(refused.empty());
}

}  // namespace
}  // namespace channel::server
