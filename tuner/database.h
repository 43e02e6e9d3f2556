// The tuning database: one SQLite file holding every measurement record of
// every task (DESIGN.md, "Tuning"). Tuning jobs append a batch of records in
// one transaction; a killed job resumes from measured_indices(); records of
// other workloads of the same op seed the cost model (records_of_op); the
// library builder takes best(); JSON lines export/import share records
// between machines.
//
// Storage (schema version 3, PRAGMA user_version; PRAGMA application_id
// marks the file as kiln's):
//   workloads(id, key UNIQUE "<workload> @ <target>", workload, op, target, flops)
//   records(id, workload_id, config JSON text, config_index TEXT, samples_ms
//           JSON array text, median_ms, gflops, error_kind, error_msg,
//           device, target, compile_ms, timestamp, kiln_version,
//           job, round, predicted, resources JSON array text)
//   machines(target PRIMARY KEY, cpu, threads, peak_gflops, bandwidth_gbs,
//            measured_at, kiln_version): the machine probe, once per target
// Version 2 added job/round/predicted (what the search knew when it chose
// the config: `kiln report`'s search-health charts) and machines; version 3
// added resources (per GPU kernel: registers, spills, shared bytes). open()
// upgrades an older file in place (records keep job '', round -1, no
// prediction and no resources); open_for_reading() reads any version and
// writes nothing.
// config_index is stored as decimal TEXT: indices reach 2^64-1, past
// SQLite's signed 64-bit INTEGER. Only equality is asked of it (resume,
// duplicates), which TEXT serves as well as a number.
//
// Concurrency and durability: the file is in WAL mode with a busy timeout,
// so several processes (tuning jobs) can read and write it at once; writers
// take the lock up front (BEGIN IMMEDIATE) and queue. synchronous=NORMAL:
// a COMMIT appends the transaction to the -wal file with write(2) before it
// returns, and only checkpoints fsync. Data handed to write(2) lives in the
// kernel's page cache, which outlives the process, so every committed batch
// survives SIGKILL or a crash of the tuner; only a power loss or an OS crash
// can roll back the last few commits (never corrupt the file).
//
// Opening never modifies a file that is not a kiln database: a non-SQLite
// file, an SQLite file of another application and a file written by a newer
// kiln (higher schema version) are refused with a UserError.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/measure.h"
#include "tuner/task.h"

namespace kiln {

namespace sql {
class Connection;
}

class Database {
 public:
  static constexpr int kSchemaVersion = 3;

  struct Record {
    std::string workload, op, target;
    nlohmann::json config;     // {"knob": value}
    std::string config_index;  // decimal uint64 (index in the task's ConfigSpace)
    std::vector<double> samples_ms;
    double median_ms = 0;
    double gflops = 0;  // 0 for errors and when the task's flops are unknown
    ErrorKind error = ErrorKind::kNone;
    std::string error_msg, device;
    double compile_ms = 0;
    int64_t timestamp = 0;  // unix seconds
    std::string kiln_version;
    // The search's view when it proposed the config: the tuning job (one
    // `kiln tune` run), its batch number within the task (0, 1, ... across
    // resumed jobs; -1 unknown) and the cost model's score before the
    // measurement (NaN: no trained model).
    std::string job;
    int round = -1;
    double predicted = std::numeric_limits<double>::quiet_NaN();
    // A cuda candidate's kernels as ptxas compiled them (registers, spills,
    // shared memory); empty for CPU records.
    std::vector<KernelResources> resources;
    int64_t id = 0;  // row id in the file it was read from (0: not read from a database; not compared)

    std::string task_key() const { return workload + " @ " + target; }
    bool ok() const { return error == ErrorKind::kNone && !samples_ms.empty(); }
    bool operator==(const Record& o) const;
    bool operator!=(const Record& o) const { return !(*this == o); }
  };

  // Where add_records' configs came from (see Record::job/round/predicted);
  // predicted is empty or one score per config.
  struct SearchTag {
    std::string job;
    int round = -1;
    std::vector<double> predicted;
  };

  // This machine's figures for a target, measured by the machine probe.
  struct Machine {
    std::string target, cpu;
    int threads = 0;
    double peak_gflops = 0;    // fp32 FMA peak with the threads
    double bandwidth_gbs = 0;  // streaming memory bandwidth with the threads
    int64_t measured_at = 0;   // unix seconds
    std::string kiln_version;
  };

  struct ImportStats {
    int64_t imported = 0;    // records added
    int64_t duplicates = 0;  // lines skipped: the record was already there
  };

  // Opens the database at `path`, creating the file and the schema when
  // missing. UserError for an unwritable path, a non-SQLite or foreign
  // file, a damaged header or schema, or a newer schema version. Damage
  // deeper in the file shows as a UserError of the query that reads it.
  static std::unique_ptr<Database> open(const std::string& path);
  // As open(), but a missing file is a UserError instead of a new database
  // (for commands that only read: show, export).
  static std::unique_ptr<Database> open_existing(const std::string& path);
  // For readers that must not change the file (kiln report, show, export,
  // lib, run --db): an existing
  // kiln database of any schema version up to this one, opened read-only,
  // neither upgraded nor switched to WAL. Writing through it is a UserError.
  static std::unique_ptr<Database> open_for_reading(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }

  // Appends one record per (config, result) in a single transaction: either
  // the whole batch is stored or none of it. The workload row is created on
  // first use. A result with timestamp 0 is stamped with the current time;
  // kiln_version is this build's KILN_VERSION.
  void add_records(const Task& task, const std::vector<Config>& configs, const std::vector<MeasureResult>& results,
                   const SearchTag& tag);
  void add_records(const Task& task, const std::vector<Config>& configs, const std::vector<MeasureResult>& results);

  // Stores (replaces) the machine figures of m.target.
  void put_machine(const Machine& m);
  std::optional<Machine> machine(const std::string& target);
  // Every target's figures, sorted by target.
  std::vector<Machine> machines();
  // Every record of every task, in insertion order, one snapshot (for reports).
  std::vector<Record> all_records();
  // Flops of every task, by task key.
  std::map<std::string, double> task_flops();
  int schema_version() const { return schema_version_; }

  // Every record of a task, in insertion order.
  std::vector<Record> records(const std::string& task_key);
  // Every record (errors included) of other workloads of `op` on `target`,
  // leaving out the task `exclude_task_key`: the transfer-learning set.
  std::vector<Record> records_of_op(const std::string& op, const std::string& target,
                                    const std::string& exclude_task_key);
  // The fastest config's record (fastest_config below) among the task's
  // error-free records; nullopt when there is none.
  std::optional<Record> best(const std::string& task_key);
  // Keys of every task that has a workload row, sorted.
  std::vector<std::string> task_keys();
  // config_index of every record of the task, errors included (a config
  // that failed is not worth measuring again on resume).
  std::unordered_set<std::string> measured_indices(const std::string& task_key);
  int64_t count(const std::string& task_key);

  // One JSON object per line per record, in insertion order (see
  // database_jsonl.cpp for the fields); returns the number of records.
  // UserError when the file cannot be written.
  int64_t export_jsonl(const std::string& path);
  // Reads records written by export_jsonl, in one transaction: a malformed
  // line is a UserError naming the line, and nothing of the file is
  // imported. Records already present (same task, config_index, timestamp
  // and samples) are skipped.
  ImportStats import_jsonl(const std::string& path);

 private:
  explicit Database(std::unique_ptr<sql::Connection> conn, std::string path);
  void init_schema();
  void upgrade();  // from any older schema version to kSchemaVersion, in one transaction
  // Id of the workload row of `key`, inserted if missing; flops > 0 fills in
  // an unknown (0) flop count. Call inside a transaction.
  int64_t workload_id(const std::string& key, const std::string& workload, const std::string& op,
                      const std::string& target, double flops);
  // Runs kSelectRecords + tail_sql (WHERE/ORDER BY with ?1.. bound to
  // params) and calls fn with each record and its workload's flops. The
  // caller holds mu_.
  void for_each_record(const std::string& tail_sql, const std::vector<std::string>& params,
                       const std::function<void(const Record&, double flops)>& fn);
  std::vector<Record> query(const std::string& tail_sql, const std::vector<std::string>& params);

  std::unique_ptr<sql::Connection> conn_;
  std::string path_;
  std::mutex mu_;  // one statement sequence at a time on the connection
  int schema_version_ = kSchemaVersion;
  bool read_only_ = false;  // open_for_reading
  void check_writable(const char* what) const;
};

// The record of the fastest config among `records` (those with errors are
// left out): each config (its knob values) is judged by the median of its
// measurements, the lower middle one of an even count, so that a config
// measured again (tuning_loop.h's confirm_task) is not the best on one fast
// measurement that its others contradict. Faster: higher gflops, then a
// lower median time (all that tells configs apart when flops are unknown),
// then the earlier record. nullopt when no record is error-free.
std::optional<Database::Record> fastest_config(const std::vector<Database::Record>& records);
// Every config's median record by that rule, fastest first.
std::vector<Database::Record> configs_by_speed(const std::vector<Database::Record>& records);

}  // namespace kiln
