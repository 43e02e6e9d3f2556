// Tuning database: record round trips, best/resume/transfer queries, JSON
// lines export/import, refusal of foreign files, durability of committed
// batches across SIGKILL, and two processes writing one file.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "support/temp_dir.h"
#include "tuner/database.h"
#include "tuner/tuner.h"
#include "tuner/tuning_loop.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::TempDir;
namespace fs = std::filesystem;
using Record = Database::Record;

namespace {

std::shared_ptr<const ConfigSpace> test_space() {
  static auto space = [] {
    auto s = std::make_shared<ConfigSpace>();
    s->define_split("tile", 64, 2);
    s->define_annotate("unroll", {"none", "unroll"});
    s->define_choice("vec", {1, 4, 8});
    return s;
  }();
  return space;
}

Task make_task(const std::string& workload, const std::string& op = "matmul", const std::string& target = "llvm",
               double flops = 2e6, std::shared_ptr<const ConfigSpace> space = test_space()) {
  Task t;
  t.workload = workload;
  t.op = op;
  t.target = target;
  t.flops = flops;
  t.space = std::move(space);
  t.instantiate = [](const Config&, LowerDepth) -> LoweredFunc { throw std::logic_error("not used by the database"); };
  return t;
}

MeasureResult ok_result(std::vector<double> samples, int64_t ts = 1700000000) {
  MeasureResult r;
  r.samples_ms = std::move(samples);
  r.device = "local";
  r.compile_ms = 12.5;
  r.timestamp = ts;
  return r;
}

MeasureResult error_result(ErrorKind kind, const std::string& msg, int64_t ts = 1700000000) {
  MeasureResult r;
  r.error = kind;
  r.message = msg;
  r.device = "local";
  r.timestamp = ts;
  return r;
}

// Raw SQLite access for what the Database API does not offer.
std::string sqlite_scalar(const std::string& path, const std::string& sql_text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql_text.c_str(), -1, &st, nullptr) == SQLITE_OK);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("database: records round trip with errors, across reopening", "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "tune.db";
  Task task = make_task("matmul:M=64,N=64,K=64");
  std::vector<Config> cfgs = {task.space->get(0), task.space->get(5), task.space->get(7), task.space->get(9)};
  std::vector<MeasureResult> res = {
      ok_result({1.0, 3.0, 2.0}), error_result(ErrorKind::kWrongResult, "out[3] = 1, expected 2"),
      error_result(ErrorKind::kCompileError, "LLVM said: \xc3\xa9 \"quoted\"\nsecond line"), ok_result({4.0, 5.0}, 0)};
  res[1].samples_ms = {0.5};  // timed, then found wrong: never the best
  {
    auto db = Database::open(path);
    db->add_records(task, cfgs, res);
    db->add_records(task, {}, {});  // an empty batch is a no-op
  }
  auto db = Database::open(path);
  CHECK(sqlite_scalar(path, "PRAGMA journal_mode") == "wal");
  CHECK(db->task_keys() == std::vector<std::string>{task.key()});
  CHECK(db->count(task.key()) == 4);
  auto rs = db->records(task.key());
  REQUIRE(rs.size() == 4);
  for (size_t i = 0; i < rs.size(); ++i) {
    CHECK(rs[i].workload == task.workload);
    CHECK(rs[i].op == "matmul");
    CHECK(rs[i].target == "llvm");
    CHECK(rs[i].task_key() == task.key());
    CHECK(rs[i].config == cfgs[i].to_json());
    CHECK(task.space->from_json(rs[i].config) == cfgs[i]);
    CHECK(rs[i].config_index == std::to_string(cfgs[i].index()));
    CHECK(rs[i].samples_ms == res[i].samples_ms);
    CHECK(rs[i].error == res[i].error);
    CHECK(rs[i].error_msg == res[i].message);
    CHECK(rs[i].device == "local");
    CHECK(rs[i].kiln_version == KILN_VERSION);
  }
  CHECK(rs[0].median_ms == 2.0);
  CHECK(rs[0].gflops == Approx(2e6 / 2e6));  // 2 MFLOP in 2 ms = 1 GFLOP/s
  CHECK(rs[0].compile_ms == 12.5);
  CHECK(rs[0].timestamp == 1700000000);
  CHECK(rs[1].gflops == 0);  // errors have no throughput
  CHECK(rs[2].samples_ms.empty());
  CHECK(rs[2].median_ms == 0);
  CHECK(rs[3].median_ms == 4.5);
  CHECK(std::abs(rs[3].timestamp - static_cast<int64_t>(std::time(nullptr))) < 60);  // 0 is stamped "now"
  CHECK(db->count("matmul:M=1 @ llvm") == 0);
  CHECK(db->records("matmul:M=1 @ llvm").empty());
}

TEST_CASE("database: best() is the fastest error-free record", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "tune.db");
  Task task = make_task("matmul:M=8");
  CHECK_FALSE(db->best(task.key()).has_value());
  const ConfigSpace& s = *task.space;
  db->add_records(task, {s.get(1), s.get(2)},
                  {error_result(ErrorKind::kRuntimeCrash, "SIGSEGV"), error_result(ErrorKind::kInvalidConfig, "no")});
  CHECK_FALSE(db->best(task.key()).has_value());  // errors only
  MeasureResult wrong = error_result(ErrorKind::kWrongResult, "mismatch");
  wrong.samples_ms = {0.01};
  db->add_records(task, {s.get(3), s.get(4), s.get(5)}, {ok_result({3.0}), wrong, ok_result({1.5, 1.5})});
  db->add_records(task, {s.get(6)}, {ok_result({2.0})});
  auto best = db->best(task.key());
  REQUIRE(best.has_value());
  CHECK(best->config_index == "5");
  CHECK(best->median_ms == 1.5);
  CHECK(best->gflops == Approx(2e6 / 1.5e6));
  CHECK_FALSE(db->best("other @ llvm").has_value());

  // Unknown flops: every gflops is 0, the lowest median wins.
  Task nf = make_task("matmul:M=9", "matmul", "llvm", 0);
  db->add_records(nf, {s.get(1), s.get(2), s.get(3)}, {ok_result({5.0}), ok_result({4.0}), ok_result({6.0})});
  REQUIRE(db->best(nf.key()).has_value());
  CHECK(db->best(nf.key())->config_index == "2");
  CHECK(db->best(nf.key())->gflops == 0);
}

TEST_CASE("database: a config measured several times is judged by its median", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "tune.db");
  Task task = make_task("matmul:M=8");
  const ConfigSpace& s = *task.space;
  // Config 1 was fast once (1.0 ms) and slow twice after: its median is 2.0.
  // Config 2, measured once at 1.5, is the best; config 3's two measurements
  // count as the slower (1.8), config 4 once at 1.9.
  db->add_records(task, {s.get(1), s.get(2), s.get(3), s.get(4)},
                  {ok_result({1.0}), ok_result({1.5}), ok_result({1.2}), ok_result({1.9})});
  CHECK(db->best(task.key())->config_index == "1");
  db->add_records(task, {s.get(1), s.get(3), s.get(1)}, {ok_result({2.0}), ok_result({1.8}), ok_result({2.2})});
  const auto best = db->best(task.key());
  REQUIRE(best.has_value());
  CHECK(best->config_index == "2");
  CHECK(best->median_ms == 1.5);
  const auto ranked = configs_by_speed(db->records(task.key()));
  REQUIRE(ranked.size() == 4);
  std::vector<std::string> order;
  std::vector<double> ms;
  for (const auto& r : ranked) {
    order.push_back(r.config_index);
    ms.push_back(r.median_ms);
  }
  CHECK(order == std::vector<std::string>{"2", "3", "4", "1"});
  CHECK(ms == std::vector<double>{1.5, 1.8, 1.9, 2.0});
  // Errors are no measurement of a config.
  db->add_records(
      task, {s.get(2), s.get(2)},
      {error_result(ErrorKind::kRuntimeCrash, "SIGSEGV"), error_result(ErrorKind::kRuntimeTimeout, "slow")});
  CHECK(db->best(task.key())->config_index == "2");
  CHECK_FALSE(fastest_config({}).has_value());
}

TEST_CASE("database: measured_indices covers errors and 64-bit indices", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "tune.db");
  // Four knobs of 65536 choices: indices up to 2^64 - 1.
  auto big = std::make_shared<ConfigSpace>();
  std::vector<int64_t> values(65536);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i);
  for (const char* name : {"a", "b", "c", "d"}) big->define_choice(name, values);
  Task task = make_task("huge:space", "huge", "llvm", 1e9, big);
  Config last(big.get(), {65535, 65535, 65535, 65535});
  REQUIRE(last.index() == UINT64_MAX);
  Config first = big->get(0);
  Config mid = big->get(uint64_t(1) << 63);
  db->add_records(task, {last, first, mid},
                  {ok_result({1.0}), error_result(ErrorKind::kCompileTimeout, "slow"), ok_result({2.0})});
  auto done = db->measured_indices(task.key());
  CHECK(done == std::unordered_set<std::string>{"18446744073709551615", "0", "9223372036854775808"});
  CHECK(db->best(task.key())->config_index == "18446744073709551615");
  CHECK(big->from_json(db->best(task.key())->config) == last);
  CHECK(db->measured_indices("nothing @ llvm").empty());
}

TEST_CASE("database: records_of_op returns the same op on the same target, other tasks", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "tune.db");
  Task a = make_task("matmul:M=16"), b = make_task("matmul:M=32"), c = make_task("matmul:M=16", "matmul", "cuda");
  Task d = make_task("conv2d:N=1", "conv2d");
  const ConfigSpace& s = *a.space;
  db->add_records(a, {s.get(0)}, {ok_result({1.0})});
  db->add_records(b, {s.get(1), s.get(2)}, {ok_result({1.0}), error_result(ErrorKind::kInvalidConfig, "bad")});
  db->add_records(c, {s.get(3)}, {ok_result({1.0})});
  db->add_records(d, {s.get(4)}, {ok_result({1.0})});
  auto rs = db->records_of_op("matmul", "llvm", a.key());
  REQUIRE(rs.size() == 2);
  for (const Record& r : rs) CHECK(r.task_key() == b.key());
  CHECK(rs[0].config_index == "1");
  CHECK(rs[1].error == ErrorKind::kInvalidConfig);
  CHECK(db->records_of_op("matmul", "llvm", "").size() == 3);
  CHECK(db->records_of_op("matmul", "cuda", a.key()).size() == 1);
  CHECK(db->records_of_op("softmax", "llvm", "").empty());
  CHECK(db->task_keys() == std::vector<std::string>{d.key(), c.key(), a.key(), b.key()});
}

TEST_CASE("database: export then import into a fresh database gives identical records", "[database]") {
  TempDir tmp("kiln_db");
  Task a = make_task("matmul:M=16"), b = make_task("conv2d:N=1", "conv2d", "llvm -mcpu=znver4", 0);
  const ConfigSpace& s = *a.space;
  {
    auto db = Database::open(tmp / "a.db");
    db->add_records(a, {s.get(0), s.get(1), s.get(2)},
                    {ok_result({1.25, 1.0 / 3.0, 0.1}), error_result(ErrorKind::kRuntimeTimeout, "ran past 10 s"),
                     error_result(ErrorKind::kCompileError, "caf\xc3\xa9\t\"x\"\n")});
    db->add_records(b, {s.get(3)}, {ok_result({2.0})});
    db->add_records(a, {s.get(4)}, {ok_result({0.75}, 1700000100)});
    CHECK(db->export_jsonl(tmp / "out.jsonl") == 5);
  }
  std::string text = read_file(tmp / "out.jsonl");
  CHECK(std::count(text.begin(), text.end(), '\n') == 5);
  auto first = nlohmann::json::parse(text.substr(0, text.find('\n')));
  for (const char* f : {"workload", "op", "target", "config", "config_index", "samples_ms", "median_ms", "gflops",
                        "error", "error_msg", "device", "compile_ms", "timestamp", "kiln_version"})
    CHECK(first.contains(f));
  CHECK(first["config_index"] == "0");
  CHECK(first["error"] == "none");

  auto src = Database::open(tmp / "a.db");
  auto dst = Database::open(tmp / "b.db");
  auto stats = dst->import_jsonl(tmp / "out.jsonl");
  CHECK(stats.imported == 5);
  CHECK(stats.duplicates == 0);
  CHECK(dst->task_keys() == src->task_keys());
  for (const std::string& key : src->task_keys()) {
    auto want = src->records(key), got = dst->records(key);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  }
  CHECK(dst->best(a.key()) == src->best(a.key()));
  // Importing again (or into the source) adds nothing.
  stats = dst->import_jsonl(tmp / "out.jsonl");
  CHECK(stats.imported == 0);
  CHECK(stats.duplicates == 5);
  CHECK(src->import_jsonl(tmp / "out.jsonl").duplicates == 5);
  CHECK(src->count(a.key()) == 4);
  // The imported workload keeps its flop count: new records get gflops.
  dst->add_records(a, {s.get(5)}, {ok_result({2.0})});
  CHECK(dst->records(a.key()).back().gflops == Approx(1.0));
}

TEST_CASE("database: import fills defaults and recovers unknown flops", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "tune.db");
  write_file(
      tmp / "in.jsonl",
      R"({"workload":"matmul:M=2","op":"matmul","target":"llvm","config":{"tile":[64,1],"unroll":"none","vec":1},)"
      R"("config_index":0,"samples_ms":[2.0,4.0],"gflops":3.0,"error":"none","timestamp":5})"
      "\n\n");
  auto stats = db->import_jsonl(tmp / "in.jsonl");
  CHECK(stats.imported == 1);
  auto rs = db->records("matmul:M=2 @ llvm");
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].median_ms == 3.0);
  CHECK(rs[0].gflops == 3.0);
  CHECK(rs[0].device.empty());
  // flops = 3 GFLOP/s * 3 ms = 9e6, used for records added later.
  Task t = make_task("matmul:M=2", "matmul", "llvm", 0);
  db->add_records(t, {t.space->get(1)}, {ok_result({9.0})});
  db->export_jsonl(tmp / "out.jsonl");
  auto lines = read_file(tmp / "out.jsonl");
  CHECK(nlohmann::json::parse(lines.substr(0, lines.find('\n')))["flops"].get<double>() == Approx(9e6));
}

TEST_CASE("database: a malformed JSONL line names the line and imports nothing", "[database]") {
  TempDir tmp("kiln_db");
  Task a = make_task("matmul:M=16");
  {
    auto src = Database::open(tmp / "a.db");
    src->add_records(a, {a.space->get(0), a.space->get(1)}, {ok_result({1.0}), ok_result({2.0})});
    src->export_jsonl(tmp / "good.jsonl");
  }
  std::string good = read_file(tmp / "good.jsonl");
  auto good_line = nlohmann::json::parse(good.substr(0, good.find('\n')));
  auto with = [&](const char* field, nlohmann::json v) {
    auto j = good_line;
    j[field] = v;
    return j.dump();
  };
  auto without = [&](const char* field) {
    auto j = good_line;
    j.erase(field);
    return j.dump();
  };
  std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"workload\": \"matmul:M=16\", ", "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {without("config_index"), "missing field 'config_index'"},
      {with("config_index", "-1"), "config_index '-1'"},
      {with("config_index", "18446744073709551616"), "does not fit in 64 bits"},
      {with("samples_ms", "1.0"), "samples_ms must be an array"},
      {with("error", "exploded"), "unknown error kind 'exploded'"},
      {with("timestamp", 1.5), "field 'timestamp'"},
      {with("op", "conv2d"), "recorded with op 'matmul'"},
      {with("config", 3), "field 'config' must be an object"},
      {with("resources", 3), "resources must be an array of kernels"},
      {with("resources", nlohmann::json::array({{{"registers", 8}}})), "with a string 'kernel'"},
      {with("resources", nlohmann::json::array({{{"kernel", "k0"}, {"registers", -8}}})),
       "resources of kernel 'k0': 'registers' must be a non-negative integer"},
  };
  auto db = Database::open(tmp / "b.db");
  for (const auto& [line, message] : bad) {
    CAPTURE(line);
    write_file(tmp / "bad.jsonl", good + line + "\n" + good);
    REQUIRE_THROWS_AS(db->import_jsonl(tmp / "bad.jsonl"), UserError);
    REQUIRE_THROWS_WITH(db->import_jsonl(tmp / "bad.jsonl"), Contains("line 3") && Contains(message));
    CHECK(db->task_keys().empty());
    CHECK(db->count(a.key()) == 0);
  }
  CHECK_THROWS_WITH(db->import_jsonl(tmp / "missing.jsonl"), Contains("cannot read"));
  CHECK_THROWS_WITH(db->export_jsonl(tmp / "no/such/dir.jsonl"), Contains("cannot write"));
  CHECK(db->import_jsonl(tmp / "good.jsonl").imported == 2);
}

TEST_CASE("database: open refuses files it must not touch", "[database]") {
  TempDir tmp("kiln_db");
  // Not SQLite at all.
  std::string text = std::string("matmul 1.0 2.0\n") + std::string(4096, 'x');
  write_file(tmp / "notes.txt", text);
  CHECK_THROWS_WITH(Database::open(tmp / "notes.txt"), Contains("not a kiln tuning database"));
  CHECK(read_file(tmp / "notes.txt") == text);

  // SQLite, but someone else's.
  std::string other = tmp / "other.db";
  sqlite_scalar(other, "CREATE TABLE t(x)");
  sqlite_scalar(other, "INSERT INTO t VALUES (42)");
  CHECK_THROWS_WITH(Database::open(other), Contains("another application"));
  CHECK(sqlite_scalar(other, "SELECT x FROM t") == "42");
  CHECK(sqlite_scalar(other, "PRAGMA journal_mode") == "delete");

  // Written by a newer kiln.
  std::string newer = tmp / "newer.db";
  Task a = make_task("matmul:M=16");
  Database::open(newer)->add_records(a, {a.space->get(0)}, {ok_result({1.0})});
  sqlite_scalar(newer, "PRAGMA user_version = 99");
  CHECK_THROWS_WITH(Database::open(newer), Contains("newer kiln") && Contains("schema version 99"));
  CHECK(sqlite_scalar(newer, "SELECT count(*) FROM records") == "1");

  // A kiln database whose pages past the first were overwritten: the
  // damage shows when the records are read, as a UserError.
  std::string corrupt = tmp / "corrupt.db";
  {
    std::vector<Config> cfgs(500, a.space->get(1));
    std::vector<MeasureResult> res(500, ok_result({1.0, 2.0}));
    Database::open(corrupt)->add_records(a, cfgs, res);
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    std::string junk(fs::file_size(corrupt) - 4096, '\xa5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  CHECK_THROWS_WITH(Database::open(corrupt)->records(a.key()), Contains("is corrupt"));

  // Paths that cannot hold a database.
  CHECK_THROWS_AS(Database::open(tmp / "no/such/dir/tune.db"), UserError);
  CHECK_THROWS_WITH(Database::open(tmp.path), Contains("cannot open tuning database"));
  CHECK_THROWS_AS(Database::open(""), UserError);

  CHECK_THROWS_WITH(Database::open_existing(tmp / "missing.db"), Contains("no tuning database at"));
  CHECK_FALSE(fs::exists(tmp / "missing.db"));

  // An empty file is a new database.
  write_file(tmp / "empty.db", "");
  CHECK(Database::open(tmp / "empty.db")->task_keys().empty());
  CHECK(Database::open_existing(tmp / "empty.db")->task_keys().empty());
}

namespace {

// Child process: adds batches of 10 records (batch b has timestamp b) and
// writes b to `fd` after each commit. Never returns.
[[noreturn]] void write_batches(const std::string& path, const std::string& workload, int fd, int batches) {
  int code = 0;
  try {
    auto db = Database::open(path);
    Task t = make_task(workload);
    for (int b = 1; b <= batches; ++b) {
      std::vector<Config> cfgs;
      std::vector<MeasureResult> res;
      for (int i = 0; i < 10; ++i) {
        cfgs.push_back(t.space->get(static_cast<uint64_t>((b * 10 + i) % 24)));
        res.push_back(ok_result({1.0 + i, 2.0}, b));
      }
      db->add_records(t, cfgs, res);
      if (fd >= 0 && write(fd, &b, sizeof b) != sizeof b) code = 3;
    }
  } catch (const std::exception&) {
    code = 2;
  }
  _exit(code);  // no Catch2 teardown, no atexit handlers in the child
}

}  // namespace

TEST_CASE("database: committed batches survive SIGKILL", "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "tune.db";
  // Each round kills a fresh writer at a different point of a batch (a
  // fraction of the measured batch time after a commit), on the file the
  // previous killed writer left behind.
  for (int round = 0; round < 4; ++round) {
    Task t = make_task("matmul:kill" + std::to_string(round));
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      write_batches(path, t.workload, fds[1], 1000000);
    }
    close(fds[1]);
    int last = 0, b = 0;
    auto t10 = std::chrono::steady_clock::now();
    while (last < 20 && read(fds[0], &b, sizeof b) == sizeof b) {
      last = b;
      if (last == 10) t10 = std::chrono::steady_clock::now();
    }
    REQUIRE(last >= 20);  // the child got going
    auto batch_time = (std::chrono::steady_clock::now() - t10) / (last - 10);
    std::this_thread::sleep_for(batch_time * (round + 1) / 5);
    kill(pid, SIGKILL);
    // Every report written before the kill.
    while (read(fds[0], &b, sizeof b) == sizeof b) last = b;
    close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);

    auto db = Database::open(path);
    CHECK(sqlite_scalar(path, "PRAGMA integrity_check") == "ok");
    std::map<int64_t, int> per_batch;
    for (const Record& r : db->records(t.key())) ++per_batch[r.timestamp];
    INFO("round " << round << ": reported " << last << " committed batches, found " << per_batch.size());
    for (int i = 1; i <= last; ++i) CHECK(per_batch[i] == 10);
    // Batches are atomic: the one being written when killed is whole or absent.
    for (const auto& [batch, n] : per_batch) CHECK(n == 10);
    CHECK(per_batch.size() <= static_cast<size_t>(last) + 1);
  }
}

TEST_CASE("database: two processes write one file at once", "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "shared.db";  // created by the children themselves
  const int batches = 40;
  std::vector<pid_t> pids;
  for (const char* w : {"matmul:A", "matmul:B"}) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) write_batches(path, w, -1, batches);
    pids.push_back(pid);
  }
  // A third writer in this process, on a task both children also touch.
  {
    auto db = Database::open(path);
    Task t = make_task("matmul:A");
    for (int b = 0; b < batches; ++b) db->add_records(t, {t.space->get(0)}, {ok_result({1.0}, 1000 + b)});
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto db = Database::open(path);
  CHECK(db->count(make_task("matmul:A").key()) == batches * 10 + batches);
  CHECK(db->count(make_task("matmul:B").key()) == batches * 10);
  CHECK(db->task_keys().size() == 2);
  CHECK(sqlite_scalar(path, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("database: the search's view (job, batch, prediction) is stored and exported with each record",
          "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "tune.db";
  Task task = make_task("matmul:M=64,N=64,K=64");
  auto db = Database::open(path);
  db->add_records(task, {task.space->get(1), task.space->get(2)}, {ok_result({1.0}), ok_result({2.0})},
                  Database::SearchTag{"tune-a", 3, {0.25, 0.75}});
  db->add_records(task, {task.space->get(3)}, {ok_result({3.0})});  // untagged: no job, batch -1, no prediction
  auto rs = db->records(task.key());
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].job == "tune-a");
  CHECK(rs[0].round == 3);
  CHECK(rs[0].predicted == 0.25);
  CHECK(rs[1].predicted == 0.75);
  CHECK(rs[2].job.empty());
  CHECK(rs[2].round == -1);
  CHECK(std::isnan(rs[2].predicted));
  CHECK(db->all_records().size() == 3);
  CHECK(db->task_flops().at(task.key()) == 2e6);
  // JSON lines carry them to another database.
  db->export_jsonl(tmp / "r.jsonl");
  auto other = Database::open(tmp / "other.db");
  CHECK(other->import_jsonl(tmp / "r.jsonl").imported == 3);
  auto back = other->records(task.key());
  REQUIRE(back.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    back[i].id = rs[i].id;
    CHECK(back[i] == rs[i]);
  }
  write_file(tmp / "bad.jsonl",
             R"({"workload":"w","op":"o","target":"t","config":{},"config_index":"1","samples_ms":[],"error":"none",)"
             R"("round":"two"})"
             "\n");
  CHECK_THROWS_WITH(other->import_jsonl(tmp / "bad.jsonl"), Contains("field 'round' must be an integer >= -1"));
}

TEST_CASE("database: machine figures, once per target", "[database]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "m.db");
  CHECK(db->machines().empty());
  CHECK_FALSE(db->machine("llvm").has_value());
  db->put_machine({"llvm", "Test CPU", 2, 300.0, 30.0, 1700000000, "0.1.0"});
  db->put_machine({"llvm", "Test CPU", 2, 310.0, 31.0, 1700000100, "0.1.0"});  // measured again: replaced
  db->put_machine({"cuda", "GPU", 1, 1000.0, 3000.0, 1700000000, "0.1.0"});
  auto ms = db->machines();
  REQUIRE(ms.size() == 2);
  CHECK(ms[0].target == "cuda");
  auto m = db->machine("llvm");
  REQUIRE(m.has_value());
  CHECK(m->peak_gflops == 310.0);
  CHECK(m->bandwidth_gbs == 31.0);
  CHECK(m->measured_at == 1700000100);
  CHECK_THROWS_WITH(db->put_machine({}), Contains("need a target"));
}

TEST_CASE("database: a version-1 file is read as it is, and upgraded in place when opened to write", "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "v1.db";
  Task task = make_task("matmul:M=64,N=64,K=64");
  {
    auto db = Database::open(path);
    db->add_records(task, {task.space->get(1)}, {ok_result({1.0})});
  }
  // What kiln's schema version 1 wrote: no search columns, no machines.
  for (const char* sql_text : {"ALTER TABLE records DROP COLUMN job", "ALTER TABLE records DROP COLUMN round",
                               "ALTER TABLE records DROP COLUMN predicted", "ALTER TABLE records DROP COLUMN resources",
                               "DROP TABLE machines",
                               "PRAGMA user_version = 1", "PRAGMA wal_checkpoint(TRUNCATE)"})
    sqlite_scalar(path, sql_text);
  const std::string before = read_file(path);
  {
    auto r = Database::open_for_reading(path);
    CHECK(r->schema_version() == 1);
    auto rs = r->all_records();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].round == -1);
    CHECK(r->machines().empty());
    CHECK_THROWS_WITH(r->put_machine({"llvm", "x", 1, 1, 1, 1, ""}), Contains("opened for reading only"));
  }
  CHECK(read_file(path) == before);  // the reader wrote nothing
  CHECK(sqlite_scalar(path, "PRAGMA user_version") == "1");
  {
    auto db = Database::open(path);
    CHECK(db->schema_version() == 3);
    CHECK(db->records(task.key()).size() == 1);
    db->add_records(task, {task.space->get(2)}, {ok_result({2.0})}, Database::SearchTag{"j", 0, {0.5}});
    db->put_machine({"llvm", "x", 1, 1, 1, 1, ""});
  }
  CHECK(sqlite_scalar(path, "PRAGMA user_version") == "3");
  auto r = Database::open_for_reading(path);
  CHECK(r->all_records().back().job == "j");
  sqlite_scalar(path, "PRAGMA user_version = 99");
  CHECK_THROWS_WITH(Database::open_for_reading(path), Contains("was written by a newer kiln (schema version 99"));
  CHECK_THROWS_WITH(Database::open_for_reading(tmp / "none.db"), Contains("no tuning database at"));
  sqlite_scalar(path, "PRAGMA user_version = 99");
  CHECK_THROWS_WITH(Database::open_for_reading(path), Contains("was written by a newer kiln (schema version 99"));
  write_file(tmp / "empty.db", "");
  CHECK_THROWS_WITH(Database::open_for_reading(tmp / "empty.db"), Contains("is empty, not a kiln tuning database"));
}

TEST_CASE("database: a GPU record keeps its kernels' registers, spills and shared memory", "[database]") {
  TempDir tmp("kiln_db");
  Task task = make_task("matmul:M=64,N=64,K=64");
  MeasureResult gpu = ok_result({0.5});
  gpu.resources = {{"kiln_matmul_kernel0", 96, 16, 8, 8192}, {"kiln_matmul_kernel1", 32, 0, 0, 0}};
  {
    auto db = Database::open(tmp / "a.db");
    db->add_records(task, {task.space->get(1), task.space->get(2)}, {gpu, ok_result({1.0})});
    db->export_jsonl(tmp / "out.jsonl");
  }
  auto db = Database::open_for_reading(tmp / "a.db");
  auto rs = db->all_records();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].resources == gpu.resources);
  CHECK(rs[1].resources.empty());  // a CPU record
  const std::string text = read_file(tmp / "out.jsonl");
  auto first = nlohmann::json::parse(text.substr(0, text.find('\n')));
  CHECK(first["resources"][0]["registers"] == 96);
  CHECK(first["resources"][0]["spill_store_bytes"] == 16);
  CHECK(first["resources"][1]["kernel"] == "kiln_matmul_kernel1");
  CHECK_FALSE(nlohmann::json::parse(text.substr(text.find('\n') + 1))
                  .contains("resources"));  // none for the CPU record
  auto copy = Database::open(tmp / "b.db");
  CHECK(copy->import_jsonl(tmp / "out.jsonl").imported == 2);
  auto cs = copy->all_records();
  REQUIRE(cs.size() == 2);
  CHECK(cs[0].resources == gpu.resources);
  // A record the tuning loop reads back to resume keeps them too.
  CHECK(copy->records(task.key())[0].resources[0].shared_bytes == 8192);
}

TEST_CASE("database: a version-2 file is read without resources, and upgraded in place when opened to write",
          "[database]") {
  TempDir tmp("kiln_db");
  std::string path = tmp / "v2.db";
  Task task = make_task("matmul:M=64,N=64,K=64");
  {
    auto db = Database::open(path);
    db->add_records(task, {task.space->get(1)}, {ok_result({1.0})}, Database::SearchTag{"j", 0, {0.5}});
  }
  // What kiln's schema version 2 wrote: no resources column.
  for (const char* sql_text :
       {"ALTER TABLE records DROP COLUMN resources", "PRAGMA user_version = 2", "PRAGMA wal_checkpoint(TRUNCATE)"})
    sqlite_scalar(path, sql_text);
  const std::string before = read_file(path);
  {
    auto r = Database::open_for_reading(path);
    CHECK(r->schema_version() == 2);
    auto rs = r->all_records();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].job == "j");
    CHECK(rs[0].resources.empty());
  }
  CHECK(read_file(path) == before);  // the reader wrote nothing
  {
    auto db = Database::open(path);
    CHECK(db->schema_version() == 3);
    MeasureResult gpu = ok_result({2.0});
    gpu.resources = {{"k", 40, 0, 0, 1024}};
    db->add_records(task, {task.space->get(2)}, {gpu});
  }
  CHECK(sqlite_scalar(path, "PRAGMA user_version") == "3");
  auto rs = Database::open_for_reading(path)->all_records();
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].job == "j");  // the old record is whole
  CHECK(rs[0].resources.empty());
  CHECK(rs[1].resources.at(0).registers == 40);
  // A stored resources text that is not an array is a message, not a crash.
  sqlite_scalar(path, "UPDATE records SET resources = '{\"x\": 1}' WHERE id = 1");
  CHECK_THROWS_WITH(Database::open_for_reading(path)->all_records(),
                    Contains("record 1 is malformed") && Contains("resources must be an array"));
}

namespace {

// The tuning loop's view of the search, scripted: configs in index order, a
// prediction for every batch but the first of each job.
class ScriptedTuner : public Tuner {
 public:
  explicit ScriptedTuner(const ConfigSpace& space) : space_(space) {}
  std::vector<Config> next_batch(int n) override {
    std::vector<Config> out;
    for (int i = 0; i < n && next_ < space_.size(); ++i) out.push_back(space_.get(next_++));
    return out;
  }
  void update(const std::vector<Config>& configs, const std::vector<MeasureResult>&) override {
    for (const Config& c : configs) next_ = std::max(next_, c.index() + 1);
    ++batches_seen_;
  }
  bool has_next() const override { return next_ < space_.size(); }
  std::vector<double> predict(const std::vector<Config>& configs) override {
    if (predicted_batches_++ == 0) return {};  // the warm-up batch: no model yet
    std::vector<double> p;
    for (const Config& c : configs) p.push_back(static_cast<double>(c.index()) / 100);
    return p;
  }
  int batches_seen_ = 0;

 private:
  const ConfigSpace& space_;
  uint64_t next_ = 0;
  int predicted_batches_ = 0;
};

class NoBuilder : public Builder {
 public:
  std::vector<BuildResult> build(const Task&, const std::vector<Config>& configs) override {
    return std::vector<BuildResult>(configs.size());
  }
};

class CountingRunner : public Runner {
 public:
  using Runner::run;
  std::vector<MeasureResult> run(const Task&, const std::vector<BuildResult>& builds,
                                 const OnResult& on_result) override {
    std::vector<MeasureResult> out;
    for (size_t i = 0; i < builds.size(); ++i) {
      out.push_back(ok_result({1.0 + static_cast<double>(i)}, 0));
      if (on_result) on_result(i, out.back());
    }
    return out;
  }
};

}  // namespace

TEST_CASE("tuning loop: every record keeps its job, its batch and the prediction made before measuring",
          "[database][tuning]") {
  TempDir tmp("kiln_db");
  auto db = Database::open(tmp / "t.db");
  Task task = make_task("matmul:M=64,N=64,K=64");
  NoBuilder builder;
  CountingRunner runner;
  TuneOptions o;
  o.trials = 12;
  o.batch = 4;
  o.job = "job-a";
  int batches = 0;
  {
    ScriptedTuner tuner(*task.space);
    tune_task(task, tuner, builder, runner, *db, o, nullptr, [&](const TuneProgress&) { ++batches; });
  }
  CHECK(batches == 3);
  // Resumed by a second job: the batch numbers go on from the first job's.
  o.trials = 16;
  o.job = "job-b";
  ScriptedTuner tuner(*task.space);
  tune_task(task, tuner, builder, runner, *db, o, nullptr);
  auto rs = db->records(task.key());
  REQUIRE(rs.size() == 16);
  for (size_t i = 0; i < rs.size(); ++i) {
    INFO("record " << i);
    CHECK(rs[i].round == static_cast<int>(i / 4));
    CHECK(rs[i].job == (i < 12 ? "job-a" : "job-b"));
    const bool warmup = i < 4 || i >= 12;  // each job's first batch: no trained model
    if (warmup)
      CHECK(std::isnan(rs[i].predicted));
    else
      CHECK(rs[i].predicted == Approx(std::stod(rs[i].config_index) / 100));
  }
}
