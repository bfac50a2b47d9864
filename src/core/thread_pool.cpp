#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace channel {
namespace {

// How long a thread spins on the pool's counters before it sleeps: longer than the gaps between
// a decode step's jobs (microseconds), far shorter than a pause in use.
constexpr auto kSpin = std::chrono::microseconds(200);

// Chunks per thread: enough that a thread finishing early takes over work of a late one, few
// enough that the counter's cache line and each chunk's set-up cost nothing next to its work.
constexpr int64_t kChunksPerThread = 8;

// Tells the core that this is a spin loop (x86's pause: the sibling hyperthread gets the core,
// and leaving the loop does not flush the pipeline).
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  wake(work_ready_);
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::wake(std::condition_variable& waiters) {
  // A thread between its check of the counters and its sleep holds mutex_: taking it once means
  // that thread is asleep by now (and will get the notification) or will see the new counters.
  { std::lock_guard lock(mutex_); }
  waiters.notify_all();
}

template <class Ready>
void ThreadPool::wait_until(std::condition_variable& wake, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (ready()) return;
    relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  std::unique_lock lock(mutex_);
  wake.wait(lock, ready);
}

void ThreadPool::run(int64_t n, int64_t grain, Job fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t threads = std::min<int64_t>(size(), n_grains);
  if (threads <= 1) {
    fn(0, n, 0);
    return;
  }
  const int64_t max_chunks = threads * kChunksPerThread;
  job_ = fn;
  job_n_ = n;
  job_chunk_ = (n_grains + max_chunks - 1) / max_chunks * grain;
  job_chunks_ = (n + job_chunk_ - 1) / job_chunk_;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  wake(work_ready_);
  take_chunks(0);  // the caller works too
  wait_until(work_done_, [this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::take_chunks(int thread) {
  for (int64_t chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed); chunk < job_chunks_;
       chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t begin = chunk * job_chunk_;
    job_(begin, std::min(job_n_, begin + job_chunk_), thread);
  }
}

void ThreadPool::worker_loop(int thread) {
  uint64_t seen_generation = 0;
  while (true) {
    wait_until(work_ready_, [&] {
      return stopping_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen_generation;
    });
    if (stopping_.load(std::memory_order_acquire)) return;
    seen_generation = generation_.load(std::memory_order_acquire);
    take_chunks(thread);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) wake(work_done_);
  }
}

}  // namespace channel
