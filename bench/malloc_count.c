// Counts malloc calls of a process and prints the count at exit, to check that a loop allocates
// nothing (docs/benchmarks.md): run the same command with two lengths and divide the difference.
//   cc -O2 -shared -fPIC bench/malloc_count.c -o /tmp/malloc_count.so -ldl
//   LD_PRELOAD=/tmp/malloc_count.so channel bench -m M -p 8 -n 16 -r 1 --no-full-ring   (then -n 48)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_long calls;

void* malloc(size_t size) {
  static void* (*next_malloc)(size_t);
  if (!next_malloc) next_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
  atomic_fetch_add(&calls, 1);
  return next_malloc(size);
}

__attribute__((destructor)) static void report(void) { fprintf(stderr, "malloc calls: %ld\n", atomic_load(&calls)); }
