// PoolRunner: the Runner of a tuning job whose candidates are measured on a
// device pool. A tuning process must stay single-threaded (its builder
// forks) while gRPC runs threads, so the runner forks a pool-client process
// (pool_client.h) on construction and exchanges PoolBatch messages with it
// over a socket. Construct it before anything starts threads.
//
// run(): build errors pass through; the artifacts of the others are read and
// sent in one batch with the task's arguments, input seed, reference samples
// and measure options (the device checks the output exactly as LocalRunner
// does). Results carry the device ("KEY@ADDRESS"), the unix time and the
// build's compile_ms. If the client process dies or overruns its bound,
// the batch's measurements are device errors and a fresh process is forked
// for the next batch.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "rpc/kiln.pb.h"
#include "rpc/client/pool_client.h"
#include "tuner/runner.h"

namespace kiln::rpc {

class PoolRunner : public kiln::Runner {
 public:
  // user_error for nonsensical options or addresses.
  PoolRunner(PoolOptions pool, kiln::MeasureOptions options = {});
  ~PoolRunner() override;
  PoolRunner(const PoolRunner&) = delete;
  PoolRunner& operator=(const PoolRunner&) = delete;

  // A device of the key (its target is what to build for); user_error when
  // none registers within the pool's key_wait_s or the tracker cannot be
  // reached.
  DeviceInfo device_info();

  using kiln::Runner::run;
  std::vector<kiln::MeasureResult> run(const kiln::Task& task, const std::vector<kiln::BuildResult>& builds,
                                       const OnResult& on_result) override;

  pid_t client_pid() const { return pid_; }

 private:
  void start_client();
  void stop_client(bool kill);
  // Sends a request and returns the client's 'O' payload; user_error for its
  // 'U' answers, InternalError for 'X'; false when the process failed.
  // `on_partial` receives the payload of each 'R' frame (a streamed reply)
  // that comes before the answer.
  bool call(char type, const std::string& payload, double timeout_s, std::string* answer, std::string* failure,
            const std::function<void(const std::string&)>& on_partial = nullptr);

  PoolOptions pool_;
  kiln::MeasureOptions options_;
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace kiln::rpc
