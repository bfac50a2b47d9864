// An environment variable set for the life of an object: tests of settings read from the
// environment (CHANNEL_VULKAN_*), run one after another in one process.
#pragma once

#include <cstdlib>

namespace channel::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace channel::testing
