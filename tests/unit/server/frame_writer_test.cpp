// The writer's bounded queue: a session producing frames for a client that does not read waits
// once `capacity` bytes are queued (memory stays bounded), the reader's own replies get four
// times the room, and everything arrives, in order, once the client reads.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "server/frame_writer.h"

namespace channel::server {
namespace {

constexpr size_t kFrame = 1024;

struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_end = fds[0];
    write_end = fds[1];
    ::fcntl(write_end, F_SETPIPE_SZ, 64 * 1024);  // the Linux default, whatever the system sets
  }
  ~Pipe() {
    ::close(read_end);
    ::close(write_end);
  }
  std::vector<uint8_t> read_all(size_t n) const {
    std::vector<uint8_t> bytes(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(read_end, bytes.data() + got, n - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    bytes.resize(got);
    return bytes;
  }
};

std::vector<uint8_t> frame_numbered(size_t i) { return std::vector<uint8_t>(kFrame, static_cast<uint8_t>(i)); }

// Sends `count` frames from a thread while nobody reads; returns how many went into the queue
// before the producer stopped making progress.
size_t sent_before_the_client_reads(FrameWriter& writer, size_t count, OutboundPriority priority,
                                    std::atomic<size_t>& sent, std::thread& producer) {
  producer = std::thread([&, count, priority] {
    for (size_t i = 0; i < count; ++i) {
      writer.send(frame_numbered(i), priority);
      ++sent;
    }
  });
  // Until the producer has made no progress for 200 ms (it waits, or it is done).
  size_t last = 0;
  for (int quiet = 0, rounds = 0; quiet < 4 && rounds < 200; ++rounds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const size_t now = sent.load();
    quiet = now == last ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

TEST(FrameWriter, TheSessionWaitsOnceCapacityBytesAreQueuedThenEverythingArrivesInOrder) {
  constexpr size_t kCapacity = 16 * kFrame, kCount = 512;  // 512 KiB: far past the pipe and the queue
  Pipe pipe;
  FrameWriter writer(pipe.write_end, kCapacity);
  std::atomic<size_t> sent{0};
  std::thread producer;
  const size_t before = sent_before_the_client_reads(writer, kCount, OutboundPriority::Session, sent, producer);
  // The pipe holds 64 frames, the queue 16, the writer one in hand: the producer waits.
  EXPECT_LE(before, 64u + 16u + 2u);
  EXPECT_LT(before, kCount);
  const std::vector<uint8_t> bytes = pipe.read_all(kCount * kFrame);
  producer.join();
  ASSERT_EQ(bytes.size(), kCount * kFrame);
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(bytes[i * kFrame], static_cast<uint8_t>(i)) << i;
}

TEST(FrameWriter, TheReadersRepliesHaveFourTimesTheRoom) {
  constexpr size_t kCapacity = 16 * kFrame, kCount = 512;
  Pipe pipe;
  FrameWriter writer(pipe.write_end, kCapacity);
  std::atomic<size_t> sent{0};
  std::thread producer;
  const size_t before = sent_before_the_client_reads(writer, kCount, OutboundPriority::Reader, sent, producer);
  EXPECT_GE(before, 64u + 4 * 16u - 2u);  // past the session's limit
  EXPECT_LE(before, 64u + 4 * 16u + 2u);
  EXPECT_EQ(pipe.read_all(kCount * kFrame).size(), kCount * kFrame);
  producer.join();
}

TEST(FrameWriter, AFrameLargerThanTheCapacityStillGoesThrough) {
  Pipe pipe;
  FrameWriter writer(pipe.write_end, /*capacity=*/16);
  std::thread reader([&] { EXPECT_EQ(pipe.read_all(4 * kFrame).size(), 4 * kFrame); });
  writer.send(std::vector<uint8_t>(4 * kFrame, 1));
  reader.join();
}

TEST(FrameWriter, AWaitingSessionIsReleasedWhenTheClientGoesAway) {
  // The write then fails with EPIPE instead of raising SIGPIPE in the test process.
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  Pipe pipe;
  FrameWriter writer(pipe.write_end, 16 * kFrame);
  std::atomic<size_t> sent{0};
  std::thread producer;
  sent_before_the_client_reads(writer, 512, OutboundPriority::Session, sent, producer);
  ::close(pipe.read_end);  // the client goes away
  pipe.read_end = ::open("/dev/null", O_RDONLY);
  producer.join();  // returns: frames after the failure are dropped
  EXPECT_TRUE(writer.failed());
  EXPECT_EQ(sent.load(), 512u);
  std::signal(SIGPIPE, previous);
}

}  // namespace
}  // namespace channel::server
