#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace channel {
namespace {

TEST(ThreadPool, ChunksCoverRangeExactlyOnceAndKeepGrain) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 32, 100, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        EXPECT_EQ(begin % 4, 0);
        for (int64_t i = begin; i < end; ++i) hits[i]++;
      }, 4);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, RepeatedJobsDoNotMixGenerations) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 500; ++round) {
    pool.parallel_for(64, [&](int64_t b, int64_t e) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 500 * 64);
}

// Jobs back to back find the workers spinning; jobs a few milliseconds apart find them asleep
// (they spin for well under a millisecond): both ways every chunk runs once, and the caller
// waits for the last one.
TEST(ThreadPool, JobsFindTheWorkersSpinningOrAsleep) {
  ThreadPool pool(3);
  for (auto pause : {std::chrono::microseconds(0), std::chrono::microseconds(3000)}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<std::atomic<int>> hits(90);
      pool.parallel_for(90, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < 90; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round << ", i " << i;
      std::this_thread::sleep_for(pause);
    }
  }
}

// The threads take chunks from a shared counter: while one thread is held up in its chunk (a
// preemption, a slower memory channel), the others take all the rest. With fixed halves the
// held thread's other chunks would wait for it and the first chunk would time out below.
TEST(ThreadPool, AHeldThreadLeavesTheOtherChunksToTheOthers) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    constexpr int64_t n = 64;
    std::atomic<bool> held{false};
    std::atomic<int64_t> done_while_held{0};
    std::atomic<int> calls{0};
    bool others_finished = false;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      ++calls;
      if (!held.exchange(true)) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (done_while_held.load() < n - (end - begin) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
        others_finished = done_while_held.load() == n - (end - begin);
      } else {
        done_while_held += end - begin;
      }
    });
    EXPECT_TRUE(others_finished) << threads << " threads";
    EXPECT_GT(calls.load(), threads) << "more chunks than threads";
    EXPECT_LE(calls.load(), threads * 8) << "a few chunks per thread, not one per index";
  }
}

// parallel_for_threads names the running thread: each index in [0, size()) is one OS thread (the
// caller is 0), so per-thread working memory indexed by it is never shared; chunks run on more
// than one thread when some chunk waits for the others.
TEST(ThreadPool, ThreadIndicesAreDistinctThreadsAndTheCallerIsZero) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    constexpr int64_t n = 256;
    std::vector<std::thread::id> owner(static_cast<size_t>(threads));
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> distinct{0};
    std::mutex mutex;
    const std::thread::id caller = std::this_thread::get_id();
    pool.parallel_for_threads(n, [&](int64_t begin, int64_t end, int thread) {
      ASSERT_GE(thread, 0);
      ASSERT_LT(thread, threads);
      {
        std::lock_guard lock(mutex);
        if (owner[thread] == std::thread::id()) {
          owner[thread] = std::this_thread::get_id();
          ++distinct;
        }
        EXPECT_EQ(owner[thread], std::this_thread::get_id()) << "index " << thread << " on two threads";
      }
      if (thread == 0) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
      }
      // Hold the first chunks a little, so that the other threads take some.
      if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (int64_t i = begin; i < end; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1);
    if (threads > 1) {
      EXPECT_GT(distinct.load(), 1) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace channel
