#include "graph/model_tuning.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "graph/executor.h"
#include "graph/model_tasks.h"
#include "graph/onnx_import.h"
#include "runtime/process_util.h"
#include "tasks/task_factory.h"
#include "tuner/local_builder.h"
#include "tuner/local_runner.h"
#include "tuner/tuning_loop.h"

namespace kiln::graph {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The network measured with the database's best configs: its latency, and
// each step's (workload "" for the kernels no task covers). It runs in a
// child process: running kernels starts kiln's thread pool, and the tuning
// loop's builder may only fork from a single-threaded process.
struct NetworkTiming {
  double total_ms = 0;
  std::vector<std::pair<std::string, double>> steps;
};

NetworkTiming measure_network(const ModelTuneOptions& o) {
  std::string error;
  proc::Child child = proc::fork_child(
      [&](int fd) {
        nlohmann::json out;
        try {
          Graph g = import_onnx(o.model, o.input_shapes);
          ExecutorOptions eo;
          eo.db_path = o.db;
          eo.target = o.target;
          Executor ex(std::move(g), eo);
          std::vector<rt::NDArray> ins;
          for (int id : ex.graph().inputs) {
            const Value& v = ex.graph().values[static_cast<size_t>(id)];
            rt::NDArray a = rt::NDArray::empty(v.shape, ex.input_dtype(id));
            a.fill_random(1);
            ins.push_back(a);
          }
          ex.run(ins);
          rt::TimeOptions t;
          t.repeat = 5;
          t.min_repeat_ms = 50;
          out["total_ms"] = ex.time(t).median_ms;
          t.repeat = 3;
          t.min_repeat_ms = 10;
          const std::vector<double> ms = ex.time_steps(t);
          for (size_t s = 0; s < ms.size(); ++s) out["steps"].push_back({ex.steps()[s].workload, ms[s]});
        } catch (const std::exception& e) {
          out = {{"error", e.what()}};
        }
        proc::send_frame(fd, out.dump());
      },
      &error);
  user_check(child.pid > 0) << "cannot start the process that measures the network: " << error;
  std::string payload;
  const proc::RecvStatus st = proc::recv_frame(child.fd, std::nullopt, &payload);
  const int status = proc::reap(child.pid, proc::Clock::now() + std::chrono::seconds(10));
  close(child.fd);
  user_check(st == proc::RecvStatus::kOk) << "the process measuring the network " << proc::describe_status(status);
  const nlohmann::json j = nlohmann::json::parse(payload);
  user_check(!j.contains("error")) << j["error"].get<std::string>();
  NetworkTiming t;
  t.total_ms = j["total_ms"];
  if (j.contains("steps"))
    for (const auto& s : j["steps"]) t.steps.emplace_back(s[0].get<std::string>(), s[1].get<double>());
  return t;
}

}  // namespace

ModelTuneResult tune_model(const ModelTuneOptions& o,
                           const std::function<void(const ModelTuneRound&, const TaskScheduler&)>& on_round) {
  user_check(o.trials > 0 || o.time_s > 0) << "give a budget: --trials N (measured configs over all tasks) or --time";
  user_check(o.batch > 0) << "--batch must be positive";
  const double start = now_s();
  Graph g = import_onnx(o.model, o.input_shapes);
  const NodeTarget node_target = NodeTarget::parse(o.target);
  const Target& target = node_target.target;
  const std::vector<ModelTask> model_tasks = extract_tasks(g, node_target);
  user_check(!model_tasks.empty()) << "model '" << o.model << "' has no node that a tunable operator computes"
                                   << (target.is_cuda() ? " on a GPU" : "");
  auto db = Database::open(o.db);

  // Each task's latency so far: the database's best, or its default config
  // as measured in the network; what no task covers is measured there too.
  ModelTuneResult result;
  const NetworkTiming before = measure_network(o);
  result.measured_before_ms = before.total_ms;
  std::map<std::string, double> step_ms;
  for (const auto& [w, ms] : before.steps) {
    if (w.empty())
      result.other_ms += ms;
    else if (!step_ms.count(w))
      step_ms[w] = ms;
  }
  // Every task is built before the builder forks.
  std::vector<Task> tasks;
  std::vector<Task> searches;  // refine knobs held (tuner/tuning_loop.h)
  std::vector<ScheduledTask> sched;
  for (const ModelTask& mt : model_tasks) {
    tasks.push_back(make_task(mt.workload, target));
    searches.push_back(search_task(tasks.back()));
    ScheduledTask st;
    st.workload = mt.workload;
    st.weight = mt.weight;
    st.flops = mt.flops;
    st.best_ms = step_ms.count(mt.workload) ? step_ms[mt.workload] : st.best_ms;
    st.trials = static_cast<int>(db->records(tasks.back().key()).size());
    sched.push_back(st);
  }
  TaskScheduler scheduler(std::move(sched), o.policy, result.other_ms);
  result.initial_estimated_ms = scheduler.estimated_ms();

  LocalBuilderOptions bo;
  bo.timeout_s = o.measure.build_timeout_s;
  for (int round = 0;; ++round) {
    if (o.trials > 0 && scheduler.total_trials() >= o.trials) break;
    if (o.time_s > 0 && now_s() - start >= o.time_s) break;
    const int i = scheduler.next();
    if (i < 0) break;
    const Task& task = tasks[static_cast<size_t>(i)];
    const ScheduledTask& st = scheduler.tasks()[static_cast<size_t>(i)];
    int batch = scheduler.batch_for(i, o.batch);
    if (o.trials > 0) batch = std::min(batch, o.trials - scheduler.total_trials());
    const Task& search = searches[static_cast<size_t>(i)];
    auto tuner = make_tuner(o.tuner, search, *db, target, std::cerr);
    LocalBuilder builder(bo);
    LocalRunner runner(o.measure);
    TuneOptions to;
    to.trials = st.trials + batch;
    to.batch = batch;
    to.job = o.job;
    const TuneResult r = tune_and_refine(task, search, *tuner, builder, runner, *db, to, {});
    const double best_ms = r.best_gflops > 0 ? task.flops / (r.best_gflops * 1e6) : st.best_ms;
    scheduler.record(i, r.trials, best_ms, r.exhausted);
    ModelTuneRound mr;
    mr.round = round;
    mr.workload = task.workload;
    mr.trials = scheduler.total_trials();
    mr.best_ms = scheduler.tasks()[static_cast<size_t>(i)].best_ms;
    mr.estimated_ms = scheduler.estimated_ms();
    mr.elapsed_s = now_s() - start;
    result.rounds.push_back(mr);
    if (on_round) on_round(mr, scheduler);
  }
  result.tasks = scheduler.tasks();
  result.measured_after_ms = measure_network(o).total_ms;
  result.elapsed_s = now_s() - start;
  return result;
}

}  // namespace kiln::graph
