// A fixed pool of worker threads for data-parallel kernels. `parallel_for` splits [0, n) into
// contiguous chunks, a few per thread, that the threads take in turn from a shared counter, and
// returns when all chunks are done; the calling thread works too, so a pool of size 1 runs
// everything inline. Taking chunks in turn (as llama.cpp's matrix products do) balances the
// threads where a fixed half each would not: a small matrix of three grains left one thread
// two of them, and a thread slowed by the other's memory traffic or by a preemption held the
// whole step.
//
// Between jobs the workers spin for a short while (kSpin in thread_pool.cpp) before they sleep,
// and so does the caller waiting for them: a decode step calls parallel_for hundreds of times,
// microseconds apart, and a thread woken from a sleep takes microseconds to start (llama.cpp's
// threads spin between operations for the same reason).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace channel {

class ThreadPool {
 public:
  // n_threads <= 0 picks the number of hardware threads.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), at most kChunksPerThread per thread
  // and in no fixed thread order. Chunks are multiples of `grain` (except the last) so callers
  // can keep SIMD blocks or quant blocks whole. `fn` is called by
  // reference, never copied (a std::function holding a lambda's captures would allocate, a
  // decode step calls this hundreds of times).
  template <class Fn>
  void parallel_for(int64_t n, const Fn& fn, int64_t grain = 1) {
    const auto call = [](const void* f, int64_t begin, int64_t end, int) { (*static_cast<const Fn*>(f))(begin, end); };
    run(n, grain, Job{call, &fn});
  }

  // parallel_for whose fn(begin, end, thread) also learns which thread runs the chunk, in
  // [0, size()): the caller is 0. For per-thread working memory that the caller owns.
  template <class Fn>
  void parallel_for_threads(int64_t n, const Fn& fn, int64_t grain = 1) {
    const auto call = [](const void* f, int64_t begin, int64_t end, int thread) {
      (*static_cast<const Fn*>(f))(begin, end, thread);
    };
    run(n, grain, Job{call, &fn});
  }

 private:
  // A caller's fn, by address, and how to call it.
  struct Job {
    void (*call)(const void* fn, int64_t begin, int64_t end, int thread) = nullptr;
    const void* fn = nullptr;
    void operator()(int64_t begin, int64_t end, int thread) const { call(fn, begin, end, thread); }
  };
  void run(int64_t n, int64_t grain, Job job);
  // Runs chunks of the current job until none is left, as thread `thread` (0: the caller).
  void take_chunks(int thread);
  void worker_loop(int thread);
  // Waits until `ready()`: spinning first, then asleep on `wake` (whose notifier changes what
  // ready() reads before it takes mutex_, so no wake-up is lost).
  template <class Ready>
  void wait_until(std::condition_variable& wake, Ready ready);
  // Wakes the threads asleep on `waiters`, called after changing what their ready() reads.
  void wake(std::condition_variable& waiters);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  // The job: written by parallel_for before it publishes a new generation (release), read by
  // the workers after they see it (acquire).
  Job job_;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  int64_t job_chunks_ = 0;
  std::atomic<int64_t> next_chunk_{0};  // the next chunk of the current job a thread may take
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still on the current job
  std::atomic<bool> stopping_{false};
};

}  // namespace channel
