// Neighbouring workloads (tasks/neighbors.h): which shapes of an op share
// tuning knowledge, how far apart they are, and the warm start of a new
// task's search from a database of tuned neighbours.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "costmodel/xgb_model.h"
#include "costmodel/features.h"
#include "support/temp_dir.h"
#include "tasks/kernel_build.h"
#include "tasks/neighbors.h"
#include "tasks/task_factory.h"
#include "tasks/tuner_factory.h"

using namespace kiln;
using kiln::testing::TempDir;

namespace {

// A measurement of one sample.
MeasureResult measured(double ms) {
  MeasureResult r;
  r.samples_ms = {ms};
  return r;
}

}  // namespace

TEST_CASE("neighbours: same op and structure, distance in log2 of the sizes", "[neighbors]") {
  const std::string a = "conv2d_nchwc:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1";
  auto d = workload_distance(a, "conv2d_nchwc:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1");
  REQUIRE(d.has_value());
  CHECK(*d == Approx(4.0));  // C, K twice as large; H, W half
  CHECK(workload_distance(a, a) == 0.0);
  // Another kernel window, stride, padding or op: not a neighbour.
  CHECK_FALSE(workload_distance(a, "conv2d_nchwc:N=1,C=64,H=56,W=56,K=64,R=1,S=1,stride=1,pad=0").has_value());
  CHECK_FALSE(workload_distance(a, "conv2d_nchwc:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=2,pad=1").has_value());
  CHECK_FALSE(workload_distance(a, "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1").has_value());
  CHECK_FALSE(workload_distance(a, "conv2d_nchwc:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,relu=1").has_value());
  CHECK_FALSE(workload_distance(a, "not_an_op:M=1").has_value());
  // Ops without declared sizes: every integer parameter is one.
  CHECK(*workload_distance("matmul:M=64,N=64,K=64", "matmul:M=128,N=64,K=32") == Approx(2.0));
  CHECK_FALSE(workload_distance("matmul:M=64,N=64,K=64", "matmul:M=64,N=64,K=64,relu=1").has_value());

  auto near = nearest_workloads("matmul:M=64,N=64,K=64",
                                {"matmul:M=512,N=64,K=64", "matmul:M=64,N=64,K=64", "matmul:M=64,N=64,K=128",
                                 "dense:N=64,IN=64,OUT=64", "matmul:M=128,N=64,K=64"});
  REQUIRE(near.size() == 3);  // itself and the dense left out
  CHECK(near[0].workload == "matmul:M=64,N=64,K=128");  // distance 1, first of the ties
  CHECK(near[1].workload == "matmul:M=128,N=64,K=64");
  CHECK(near[2].workload == "matmul:M=512,N=64,K=64");
  CHECK(near[2].distance == Approx(3.0));
}

TEST_CASE("neighbours: a new task's search starts from its tuned neighbours' records and best configs",
          "[neighbors]") {
  TempDir tmp("kiln_neighbors");
  auto db = Database::open(tmp / "n.db");
  const Target host = Target::host();
  Task tuned = make_task("matmul:M=16,N=16,K=16", host, /*with_reference=*/false);
  Task other_op = make_task("dense:N=16,IN=16,OUT=16", host, false);
  std::vector<Config> cs = {tuned.space->get(0), tuned.space->get(1), tuned.space->get(2)};
  db->add_records(tuned, cs, {measured(3.0), measured(1.0), measured(2.0)});  // get(1) is the best
  db->add_records(other_op, {other_op.space->get(0)}, {measured(1.0)});

  Task task = make_task("matmul:M=32,N=16,K=16", host, false);
  const Task* tp = &task;
  XGBoostRanker::Options mo;
  mo.nthread = 1;
  XGBTuner tuner(
      *task.space, [tp](const Config& c) { return config_features(*tp, c); },
      std::make_unique<XGBoostRanker>(mo));
  WarmStart ws = warm_start_from_neighbors(tuner, task, *db, host, 4);
  REQUIRE(ws.neighbors.size() == 1);
  CHECK(ws.neighbors[0].workload == tuned.workload);
  CHECK(ws.transfer_records == 3);
  CHECK(ws.seeds == 1);
  std::vector<Config> batch = tuner.next_batch(8);
  REQUIRE(batch.size() == 8);
  CHECK(batch[0] == task.space->nearest(cs[1].to_json()));  // the neighbour's best, measured first
  CHECK(tuner.stats().last_seeded == 1);
  for (size_t i = 1; i < batch.size(); ++i) CHECK_FALSE(batch[i] == batch[0]);
  CHECK(tuner.next_batch(8).size() == 8);
  CHECK(tuner.stats().last_seeded == 0);  // seeds go once
  // No seeds asked for: transfer data only.
  XGBTuner plain(
      *task.space, [tp](const Config& c) { return config_features(*tp, c); },
      std::make_unique<XGBoostRanker>(mo));
  CHECK(warm_start_from_neighbors(plain, task, *db, host, 0).seeds == 0);
}

TEST_CASE("tuner factory: the xgb search measures the template's default config first, then the neighbours' best",
          "[neighbors][tuner]") {
  TempDir tmp("kiln_default_seed");
  auto db = Database::open(tmp / "d.db");
  const Target host = Target::host();
  Task tuned = make_task("matmul:M=16,N=16,K=16", host, /*with_reference=*/false);
  db->add_records(tuned, {tuned.space->get(1)}, {measured(1.0)});

  Task task = make_task("matmul:M=32,N=16,K=16", host, false);
  std::ostringstream log;
  TunerChoice choice;
  std::unique_ptr<Tuner> tuner = make_tuner(choice, task, *db, host, log);
  const std::vector<Config> batch = tuner->next_batch(4);
  REQUIRE(batch.size() == 4);
  const Config def = task.space->from_json(template_default_config(build_workload(task.workload), host));
  CHECK(batch[0] == def);
  CHECK(batch[1] == task.space->nearest(tuned.space->get(1).to_json()));
  // Held knobs (kiln tune --fix): the default's nearest config that keeps them.
  Task fixed = make_task("matmul:M=32,N=16,K=16", host, false);
  fix_task_knobs(&fixed, R"({"prefetch":4})");
  std::unique_ptr<Tuner> held = make_tuner(choice, fixed, *db, host, log);
  const Config first = held->next_batch(1).at(0);
  CHECK(first.choice("prefetch") == 4);
}
