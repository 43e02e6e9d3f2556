// The tuning database: opening and schema checks, appending batches, and the
// queries of the tuning loop (see database.h for the storage layout and the
// durability argument). JSON lines export/import: database_jsonl.cpp.
#include "tuner/database.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "base/error.h"
#include "tuner/database_internal.h"
#include "tuner/database_sqlite.h"

namespace kiln {

namespace {

// PRAGMA application_id of kiln databases: "KILN" in ASCII.
constexpr int32_t kApplicationId = 0x4B494C4E;
// How long a writer waits for another process's transaction to finish.
constexpr int kBusyTimeoutMs = 60000;

const char* const kSchemaSql = R"sql(
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  "key" TEXT NOT NULL UNIQUE,
  workload TEXT NOT NULL,
  op TEXT NOT NULL,
  target TEXT NOT NULL,
  flops REAL NOT NULL DEFAULT 0
);
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  config TEXT NOT NULL,
  config_index TEXT NOT NULL,
  samples_ms TEXT NOT NULL,
  median_ms REAL NOT NULL,
  gflops REAL NOT NULL,
  error_kind TEXT NOT NULL,
  error_msg TEXT NOT NULL,
  device TEXT NOT NULL,
  target TEXT NOT NULL,
  compile_ms REAL NOT NULL,
  timestamp INTEGER NOT NULL,
  kiln_version TEXT NOT NULL,
  job TEXT NOT NULL DEFAULT '',
  round INTEGER NOT NULL DEFAULT -1,
  predicted REAL,
  resources TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX records_by_workload ON records(workload_id);
CREATE INDEX records_by_workload_config ON records(workload_id, config_index);
)sql";

// New in version 2 (also created by the upgrade from version 1).
const char* const kMachinesSql = R"sql(
CREATE TABLE machines (
  target TEXT PRIMARY KEY,
  cpu TEXT NOT NULL,
  threads INTEGER NOT NULL,
  peak_gflops REAL NOT NULL,
  bandwidth_gbs REAL NOT NULL,
  measured_at INTEGER NOT NULL,
  kiln_version TEXT NOT NULL
);
)sql";

struct FileState {
  int64_t application_id = 0;
  int64_t user_version = 0;
  int64_t objects = 0;  // rows of sqlite_master
};

// One statement, so one snapshot: another process may create the schema
// between two separate reads.
FileState read_state(sql::Connection& c) {
  sql::Statement s(c,
                   "SELECT (SELECT application_id FROM pragma_application_id), "
                   "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)");
  internal_assert(s.step()) << "reading the database header returned no row";
  FileState st;
  st.application_id = s.int64(0);
  st.user_version = s.int64(1);
  st.objects = s.int64(2);
  return st;
}

// True when the file is empty (new) and needs the schema; throws for a
// file that kiln must not touch.
bool needs_schema(const FileState& st, const std::string& path) {
  if (st.application_id == 0 && st.user_version == 0 && st.objects == 0) return true;
  user_check(st.application_id == kApplicationId)
      << "'" << path << "' is an SQLite database of another application, not a kiln tuning database; it was left "
      << "untouched";
  user_check(st.user_version <= Database::kSchemaVersion)
      << "tuning database '" << path << "' was written by a newer kiln (schema version " << st.user_version
      << "; this kiln reads versions up to " << Database::kSchemaVersion << "); it was left untouched";
  user_check(st.user_version >= 1) << "tuning database '" << path << "' has no schema version; it was left untouched";
  return false;
}

// WAL is persistent (stored in the file); setting it again is a no-op.
// Switching a new file to WAL needs an exclusive lock, and SQLite answers
// SQLITE_BUSY at once (without its busy handler) while another process
// holds a shared lock, e.g. a second job opening the same new file: retry.
std::string set_wal_mode(sql::Connection& c) {
  std::string mode;
  auto on_row = [](void* out, int, char** values, char**) {
    *static_cast<std::string*>(out) = values[0] ? values[0] : "";
    return 0;
  };
  for (int waited_ms = 0;; waited_ms += 5) {
    int rc = sqlite3_exec(c.handle(), "PRAGMA journal_mode = WAL", on_row, &mode, nullptr);
    if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs) {
      c.check(rc, "switching to WAL mode");
      return mode;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0; }

const char* const kUpgradeV1Sql = R"sql(
ALTER TABLE records ADD COLUMN job TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN round INTEGER NOT NULL DEFAULT -1;
ALTER TABLE records ADD COLUMN predicted REAL;
)sql";

// New in version 3: each GPU kernel's registers, spills and shared memory.
const char* const kUpgradeV2Sql = R"sql(
ALTER TABLE records ADD COLUMN resources TEXT NOT NULL DEFAULT '[]';
)sql";

// The SELECT of for_each_record; a version-1 file (read without upgrading)
// has no search columns and reads as job '', round -1, no prediction; a
// version-1 or -2 file has no resources.
std::string select_records_sql(int schema_version) {
  std::string search = schema_version >= 2 ? "r.job, r.round, r.predicted, " : "'', -1, NULL, ";
  search += schema_version >= 3 ? "r.resources " : "'[]' ";
  return "SELECT r.id, w.workload, w.op, w.target, w.flops, r.config, r.config_index, r.samples_ms, r.median_ms, "
         "r.gflops, r.error_kind, r.error_msg, r.device, r.compile_ms, r.timestamp, r.kiln_version, " +
         search + "FROM records r JOIN workloads w ON w.id = r.workload_id ";
}

}  // namespace

namespace db_detail {

const char* const kInsertRecord =
    "INSERT INTO records (workload_id, config, config_index, samples_ms, median_ms, gflops, error_kind, error_msg, "
    "device, target, compile_ms, timestamp, kiln_version, job, round, predicted, resources) VALUES (?1, ?2, ?3, ?4, "
    "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)";

std::string samples_text(const std::vector<double>& samples) { return nlohmann::json(samples).dump(); }

nlohmann::json resources_json(const std::vector<KernelResources>& resources) {
  nlohmann::json j = nlohmann::json::array();
  for (const KernelResources& k : resources)
    j.push_back({{"kernel", k.kernel},
                 {"registers", k.registers},
                 {"spill_store_bytes", k.spill_store_bytes},
                 {"spill_load_bytes", k.spill_load_bytes},
                 {"shared_bytes", k.shared_bytes}});
  return j;
}

std::vector<KernelResources> parse_resources(const nlohmann::json& j) {
  user_check(j.is_array()) << "resources must be an array of kernels";
  std::vector<KernelResources> out;
  for (const auto& k : j) {
    user_check(k.is_object() && k.contains("kernel") && k["kernel"].is_string())
        << "each of resources must be an object with a string 'kernel'";
    KernelResources r;
    r.kernel = k["kernel"].get<std::string>();
    auto count = [&](const char* name) -> int64_t {
      if (!k.contains(name)) return 0;
      user_check(k[name].is_number_integer() && k[name].get<int64_t>() >= 0)
          << "resources of kernel '" << r.kernel << "': '" << name << "' must be a non-negative integer";
      return k[name].get<int64_t>();
    };
    r.registers = static_cast<int>(std::min<int64_t>(count("registers"), INT32_MAX));
    r.spill_store_bytes = count("spill_store_bytes");
    r.spill_load_bytes = count("spill_load_bytes");
    r.shared_bytes = count("shared_bytes");
    out.push_back(r);
  }
  return out;
}

void insert_record(sql::Statement& ins, int64_t workload_id, const Database::Record& r) {
  ins.reset();
  ins.bind(1, workload_id)
      .bind(2, r.config.dump())
      .bind(3, r.config_index)
      .bind(4, samples_text(r.samples_ms))
      .bind(5, finite_or_zero(r.median_ms))
      .bind(6, finite_or_zero(r.gflops))
      .bind(7, std::string(error_kind_name(r.error)))
      .bind(8, r.error_msg)
      .bind(9, r.device)
      .bind(10, r.target)
      .bind(11, finite_or_zero(r.compile_ms))
      .bind(12, r.timestamp)
      .bind(13, r.kiln_version)
      .bind(14, r.job)
      .bind(15, static_cast<int64_t>(r.round));
  if (std::isfinite(r.predicted))
    ins.bind(16, r.predicted);
  else
    ins.bind_null(16);
  ins.bind(17, resources_json(r.resources).dump());
  ins.step();
}

std::vector<double> parse_samples(const nlohmann::json& j) {
  user_check(j.is_array()) << "samples_ms must be an array of numbers";
  std::vector<double> out;
  out.reserve(j.size());
  for (const auto& v : j) {
    // JSON has no NaN: nlohmann writes it as null, so null reads back as NaN.
    if (v.is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    user_check(v.is_number()) << "samples_ms must be an array of numbers";
    out.push_back(v.get<double>());
  }
  return out;
}

}  // namespace db_detail

bool Database::Record::operator==(const Record& o) const {
  return workload == o.workload && op == o.op && target == o.target && config == o.config &&
         config_index == o.config_index && samples_ms == o.samples_ms && median_ms == o.median_ms &&
         gflops == o.gflops && error == o.error && error_msg == o.error_msg && device == o.device &&
         compile_ms == o.compile_ms && timestamp == o.timestamp && kiln_version == o.kiln_version && job == o.job &&
         round == o.round && resources == o.resources && (predicted == o.predicted || (std::isnan(predicted) && std::isnan(o.predicted)));
}

Database::Database(std::unique_ptr<sql::Connection> conn, std::string path)
    : conn_(std::move(conn)), path_(std::move(path)) {}

Database::~Database() = default;

std::unique_ptr<Database> Database::open(const std::string& path) {
  user_check(!path.empty()) << "the tuning database path is empty";
  auto conn = std::make_unique<sql::Connection>(path);
  std::unique_ptr<Database> db(new Database(std::move(conn), path));
  db->init_schema();
  return db;
}

std::unique_ptr<Database> Database::open_existing(const std::string& path) {
  std::error_code ec;
  user_check(!path.empty() && std::filesystem::exists(path, ec)) << "no tuning database at '" << path << "'";
  return open(path);
}

std::unique_ptr<Database> Database::open_for_reading(const std::string& path) {
  std::error_code ec;
  user_check(!path.empty() && std::filesystem::is_regular_file(path, ec)) << "no tuning database at '" << path << "'";
  auto conn = std::make_unique<sql::Connection>(path, /*read_only=*/true);
  std::unique_ptr<Database> db(new Database(std::move(conn), path));
  sql::Connection& c = *db->conn_;
  c.check(sqlite3_busy_timeout(c.handle(), kBusyTimeoutMs), "setting the busy timeout");
  FileState st = read_state(c);
  user_check(!needs_schema(st, path)) << "'" << path << "' is empty, not a kiln tuning database";
  db->schema_version_ = static_cast<int>(st.user_version);
  db->read_only_ = true;
  return db;
}

void Database::check_writable(const char* what) const {
  user_check(!read_only_) << "tuning database '" << path_ << "' was opened for reading only (" << what << ")";
}

void Database::init_schema() {
  sql::Connection& c = *conn_;
  c.check(sqlite3_busy_timeout(c.handle(), kBusyTimeoutMs), "setting the busy timeout");
  // Read-only checks first: nothing is written to a file that is not ours.
  FileState st = read_state(c);
  if (needs_schema(st, path_)) {
    sql::Transaction t(c);
    // Another process may have created the schema since the check above.
    if (needs_schema(read_state(c), path_)) {
      c.exec(kSchemaSql);
      c.exec(kMachinesSql);
      c.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
      c.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    }
    t.commit();
  }
  // Also when an older kiln created the schema between the check above and
  // the transaction.
  if (read_state(c).user_version < kSchemaVersion) upgrade();
  std::string mode = set_wal_mode(c);
  if (mode != "wal")
    spdlog::warn("tuning database '{}' runs in journal mode '{}', not WAL: concurrent jobs will wait longer", path_,
                 mode);
  c.exec("PRAGMA synchronous = NORMAL");
  c.exec("PRAGMA foreign_keys = ON");
}

void Database::upgrade() {
  sql::Connection& c = *conn_;
  sql::Transaction t(c);
  // Another process may have upgraded it since the check in init_schema.
  const int64_t from = read_state(c).user_version;
  if (from < kSchemaVersion) {
    if (from < 2) {
      c.exec(kUpgradeV1Sql);
      c.exec(kMachinesSql);
    }
    if (from < 3) c.exec(kUpgradeV2Sql);
    c.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    spdlog::info("tuning database '{}' upgraded from schema version {} to {}", path_, from, kSchemaVersion);
  }
  t.commit();
}

int64_t Database::workload_id(const std::string& key, const std::string& workload, const std::string& op,
                              const std::string& target, double flops) {
  sql::Statement sel(*conn_, "SELECT id, op, flops FROM workloads WHERE \"key\" = ?1");
  sel.bind(1, key);
  if (sel.step()) {
    int64_t id = sel.int64(0);
    std::string have_op = sel.text(1);
    user_check(have_op == op) << "task '" << key << "' is recorded with op '" << have_op << "', not '" << op << "'";
    if (sel.real(2) == 0 && flops > 0 && std::isfinite(flops)) {
      sql::Statement upd(*conn_, "UPDATE workloads SET flops = ?1 WHERE id = ?2");
      upd.bind(1, flops).bind(2, id).step();
    }
    return id;
  }
  sql::Statement ins(*conn_,
                     "INSERT INTO workloads (\"key\", workload, op, target, flops) VALUES (?1, ?2, ?3, ?4, ?5)");
  ins.bind(1, key).bind(2, workload).bind(3, op).bind(4, target).bind(5, finite_or_zero(flops)).step();
  return sqlite3_last_insert_rowid(conn_->handle());
}

void Database::add_records(const Task& task, const std::vector<Config>& configs,
                           const std::vector<MeasureResult>& results) {
  add_records(task, configs, results, SearchTag());
}

void Database::add_records(const Task& task, const std::vector<Config>& configs,
                           const std::vector<MeasureResult>& results, const SearchTag& tag) {
  internal_assert(configs.size() == results.size())
      << configs.size() << " configs but " << results.size() << " results";
  internal_assert(tag.predicted.empty() || tag.predicted.size() == configs.size())
      << configs.size() << " configs but " << tag.predicted.size() << " predictions";
  if (configs.empty()) return;
  check_writable("adding records");
  std::lock_guard<std::mutex> lock(mu_);
  int64_t now = static_cast<int64_t>(std::time(nullptr));
  sql::Transaction t(*conn_);
  int64_t wid = workload_id(task.key(), task.workload, task.op, task.target, task.flops);
  sql::Statement ins(*conn_, db_detail::kInsertRecord);
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& cfg = configs[i];
    const MeasureResult& res = results[i];
    internal_assert(cfg.space() != nullptr) << "add_records: config " << i << " belongs to no space";
    Record r;
    r.target = task.target;
    r.config = cfg.to_json();
    r.config_index = std::to_string(cfg.index());
    r.samples_ms = res.samples_ms;
    r.median_ms = res.median_ms();
    r.gflops = res.ok() && r.median_ms > 0 && task.flops > 0 ? task.flops / (r.median_ms * 1e6) : 0;
    r.error = res.error;
    r.error_msg = res.message;
    r.device = res.device;
    r.compile_ms = res.compile_ms;
    r.resources = res.resources;
    r.timestamp = res.timestamp != 0 ? res.timestamp : now;
    r.kiln_version = KILN_VERSION;
    r.job = tag.job;
    r.round = tag.round;
    if (!tag.predicted.empty()) r.predicted = tag.predicted[i];
    db_detail::insert_record(ins, wid, r);
  }
  t.commit();
}

void Database::for_each_record(const std::string& tail_sql, const std::vector<std::string>& params,
                               const std::function<void(const Record&, double flops)>& fn) {
  std::string sql = select_records_sql(schema_version_) + tail_sql;
  sql::Statement s(*conn_, sql.c_str());
  for (size_t i = 0; i < params.size(); ++i) s.bind(static_cast<int>(i + 1), params[i]);
  while (s.step()) {
    Record r;
    int64_t id = s.int64(0);
    r.workload = s.text(1);
    r.op = s.text(2);
    r.target = s.text(3);
    double flops = s.real(4);
    try {
      r.config = nlohmann::json::parse(s.text(5));
      r.config_index = s.text(6);
      r.samples_ms = db_detail::parse_samples(nlohmann::json::parse(s.text(7)));
      r.error = parse_error_kind(s.text(10));
    } catch (const std::exception& e) {
      user_error() << "tuning database '" << path_ << "': record " << id << " is malformed: " << e.what();
    }
    r.median_ms = s.real(8);
    r.gflops = s.real(9);
    r.error_msg = s.text(11);
    r.device = s.text(12);
    r.compile_ms = s.real(13);
    r.timestamp = s.int64(14);
    r.kiln_version = s.text(15);
    r.job = s.text(16);
    r.round = static_cast<int>(s.int64(17));
    if (!s.is_null(18)) r.predicted = s.real(18);
    try {
      r.resources = db_detail::parse_resources(nlohmann::json::parse(s.text(19)));
    } catch (const std::exception& e) {
      user_error() << "tuning database '" << path_ << "': record " << id << " is malformed: " << e.what();
    }
    r.id = id;
    fn(r, flops);
  }
}

std::vector<Database::Record> Database::query(const std::string& tail_sql, const std::vector<std::string>& params) {
  std::vector<Record> out;
  for_each_record(tail_sql, params, [&](const Record& r, double) { out.push_back(r); });
  return out;
}

std::vector<Database::Record> Database::records(const std::string& task_key) {
  std::lock_guard<std::mutex> lock(mu_);
  return query("WHERE w.\"key\" = ?1 ORDER BY r.id", {task_key});
}

std::vector<Database::Record> Database::records_of_op(const std::string& op, const std::string& target,
                                                      const std::string& exclude_task_key) {
  std::lock_guard<std::mutex> lock(mu_);
  return query("WHERE w.op = ?1 AND w.target = ?2 AND w.\"key\" <> ?3 ORDER BY r.id", {op, target, exclude_task_key});
}

std::optional<Database::Record> Database::best(const std::string& task_key) {
  std::lock_guard<std::mutex> lock(mu_);
  return fastest_config(
      query("WHERE w.\"key\" = ?1 AND r.error_kind = 'none' AND r.samples_ms <> '[]' ORDER BY r.id", {task_key}));
}

std::vector<Database::Record> configs_by_speed(const std::vector<Database::Record>& records) {
  // a faster than b (ties: the earlier record).
  auto faster = [](const Database::Record& a, const Database::Record& b) {
    if (a.gflops != b.gflops) return a.gflops > b.gflops;
    if (a.median_ms != b.median_ms) return a.median_ms < b.median_ms;
    return a.id < b.id;
  };
  // By the config itself: a config's index depends on the space that
  // recorded it (a search's space holds its refine knobs).
  std::map<std::string, std::vector<const Database::Record*>> by_config;
  for (const Database::Record& r : records)
    if (r.ok()) by_config[r.config.dump()].push_back(&r);
  std::vector<Database::Record> out;
  for (auto& [index, measured] : by_config) {
    // Slowest first: the lower middle is at (n - 1) / 2.
    std::sort(measured.begin(), measured.end(), [&](const auto* a, const auto* b) { return faster(*b, *a); });
    out.push_back(*measured[(measured.size() - 1) / 2]);
  }
  std::sort(out.begin(), out.end(), faster);
  return out;
}

std::optional<Database::Record> fastest_config(const std::vector<Database::Record>& records) {
  std::vector<Database::Record> ranked = configs_by_speed(records);
  if (ranked.empty()) return std::nullopt;
  return ranked.front();
}

std::vector<Database::Record> Database::all_records() {
  std::lock_guard<std::mutex> lock(mu_);
  return query("ORDER BY r.id", {});
}

std::map<std::string, double> Database::task_flops() {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Statement s(*conn_, "SELECT \"key\", flops FROM workloads");
  std::map<std::string, double> out;
  while (s.step()) out[s.text(0)] = s.real(1);
  return out;
}

void Database::put_machine(const Machine& m) {
  user_check(!m.target.empty()) << "machine figures need a target";
  check_writable("storing machine figures");
  std::lock_guard<std::mutex> lock(mu_);
  sql::Transaction t(*conn_);
  sql::Statement ins(*conn_,
                     "INSERT OR REPLACE INTO machines (target, cpu, threads, peak_gflops, bandwidth_gbs, measured_at, "
                     "kiln_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  ins.bind(1, m.target)
      .bind(2, m.cpu)
      .bind(3, static_cast<int64_t>(m.threads))
      .bind(4, finite_or_zero(m.peak_gflops))
      .bind(5, finite_or_zero(m.bandwidth_gbs))
      .bind(6, m.measured_at)
      .bind(7, m.kiln_version)
      .step();
  t.commit();
}

std::vector<Database::Machine> Database::machines() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Machine> out;
  if (schema_version_ < 2) return out;  // a version-1 file read as it is
  sql::Statement s(*conn_,
                   "SELECT target, cpu, threads, peak_gflops, bandwidth_gbs, measured_at, kiln_version FROM machines "
                   "ORDER BY target");
  while (s.step())
    out.push_back({s.text(0), s.text(1), static_cast<int>(s.int64(2)), s.real(3), s.real(4), s.int64(5), s.text(6)});
  return out;
}

std::optional<Database::Machine> Database::machine(const std::string& target) {
  for (Machine& m : machines())
    if (m.target == target) return m;
  return std::nullopt;
}

std::vector<std::string> Database::task_keys() {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Statement s(*conn_, "SELECT \"key\" FROM workloads ORDER BY \"key\"");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::unordered_set<std::string> Database::measured_indices(const std::string& task_key) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Statement s(*conn_,
                   "SELECT r.config_index FROM records r JOIN workloads w ON w.id = r.workload_id "
                   "WHERE w.\"key\" = ?1");
  s.bind(1, task_key);
  std::unordered_set<std::string> out;
  while (s.step()) out.insert(s.text(0));
  return out;
}

int64_t Database::count(const std::string& task_key) {
  std::lock_guard<std::mutex> lock(mu_);
  sql::Statement s(*conn_,
                   "SELECT count(*) FROM records r JOIN workloads w ON w.id = r.workload_id WHERE w.\"key\" = ?1");
  s.bind(1, task_key);
  internal_assert(s.step());
  return s.int64(0);
}

}  // namespace kiln
