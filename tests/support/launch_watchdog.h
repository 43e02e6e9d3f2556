// For tests that run kernels under the CUDA emulation: a watchdog that
// ends the test binary if a launch hangs (ctest's timeout is much longer),
// and the skip for a machine without a host C++ compiler.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "codegen/cuda_emulation.h"
#include "skip.h"

namespace kiln::testing {

class LaunchWatchdog {
 public:
  // `test` names the binary in the message.
  LaunchWatchdog(const char* test, int seconds)
      : thread_([this, test, seconds] {
          std::unique_lock<std::mutex> lk(mu_);
          if (!cv_.wait_for(lk, std::chrono::seconds(seconds), [this] { return done_; })) {
            std::fprintf(stderr, "%s: a launch hung for %d s\n", test, seconds);
            std::_Exit(3);
          }
        }) {}
  ~LaunchWatchdog() {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace kiln::testing

#define SKIP_WITHOUT_COMPILER() \
  if (kiln::host_cxx_compiler().empty()) KILN_SKIP("no host C++ compiler (c++, g++, clang++) for CUDA emulation")
