// LocalBuilder: compiles candidates on this machine, each in its own forked
// child process, several at once.
//
// A child instantiates the task's template with the config (lowering to
// kFull), compiles it for the task's target (any LLVM target: cross-compiling
// is the same path) and links a .so into the builder's private temporary
// directory, then reports to the parent over a socket and exits. The parent
// enforces a time limit per candidate (SIGKILL) and reaps every child. LLVM
// compilation cannot be interrupted, and a pathological config must neither
// hang nor crash the tuner: that is why each compile is a process.
//
// Outcomes: a UserError from instantiate -> kInvalidConfig; any other
// exception while lowering, generating code or linking, or a child that dies
// without a result -> kCompileError; past the time limit -> kCompileTimeout.
//
// THREADS: fork() is only safe while the calling process runs one thread
// (a lock held by another thread at fork time stays locked in the child).
// The tuning process must not start threads: the runtime thread pool starts
// lazily only when a kernel runs in-process, and a tuning process never runs
// kernels in-process (LocalRunner measures in a worker process). build()
// checks /proc/self/task before forking and throws InternalError otherwise.
#pragma once

#include <string>
#include <vector>

#include "tuner/builder.h"

namespace kiln {

struct LocalBuilderOptions {
  int jobs = 0;           // concurrent compiles; 0: the hardware concurrency
  double timeout_s = 30;  // per candidate (MeasureOptions::build_timeout_s)
  std::string temp_root;  // where the private directory goes; "": $TMPDIR, else /tmp
};

class LocalBuilder : public Builder {
 public:
  // Creates the private directory; a user error when it cannot.
  explicit LocalBuilder(LocalBuilderOptions options = {});
  // Removes the directory and every artifact in it.
  ~LocalBuilder() override;
  LocalBuilder(const LocalBuilder&) = delete;
  LocalBuilder& operator=(const LocalBuilder&) = delete;

  // One result per config, in order. The artifacts of a call stay on disk
  // until the next build() call (which first empties the directory) or the
  // builder's destruction: build a batch, run it, then build the next.
  std::vector<BuildResult> build(const Task& task, const std::vector<Config>& configs) override;

  const std::string& directory() const { return dir_; }
  int jobs() const { return jobs_; }

 private:
  void clear_directory() const;

  std::string dir_;
  int jobs_;
  double timeout_s_;
};

}  // namespace kiln
