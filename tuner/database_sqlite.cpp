// RAII wrappers over the SQLite C API (see database_sqlite.h).
#include "tuner/database_sqlite.h"

#include "base/error.h"

namespace kiln {
namespace sql {

Connection::Connection(const std::string& path, bool read_only) : path_(path) {
  // No SQLITE_OPEN_URI: the path is a plain file name. FULLMUTEX makes the
  // handle safe to use from several threads (the Database also serializes).
  int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    user_error() << "cannot open tuning database '" << path << "': " << msg;
  }
  sqlite3_extended_result_codes(db_, 1);
  if (!read_only && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    user_error() << "cannot open tuning database '" << path << "': the file is not writable";
  }
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::fail(int rc, const char* what) const {
  int primary = rc & 0xff;
  std::string msg = sqlite3_errmsg(db_);
  if (primary == SQLITE_NOTADB)
    user_error() << "'" << path_ << "' is not a kiln tuning database (not an SQLite file, or encrypted)";
  if (primary == SQLITE_CORRUPT)
    user_error() << "tuning database '" << path_ << "' is corrupt (" << msg << "); it was left untouched";
  if (primary == SQLITE_READONLY)
    user_error() << "tuning database '" << path_ << "' was opened for reading only (" << what << ")";
  if (primary == SQLITE_BUSY)
    user_error() << "tuning database '" << path_ << "' stayed locked by another process (" << what << ")";
  user_error() << "tuning database '" << path_ << "': " << what << " failed: " << msg;
}

void Connection::check(int rc, const char* what) const {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc, what);
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);  // sqlite3_errmsg still holds the message
  check(rc, sql.c_str());
}

Statement::Statement(Connection& c, const char* sql) : conn_(c) {
  int rc = sqlite3_prepare_v2(c.handle(), sql, -1, &stmt_, nullptr);
  c.check(rc, sql);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, int64_t v) {
  conn_.check(sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}

Statement& Statement::bind(int i, double v) {
  conn_.check(sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}

Statement& Statement::bind_null(int i) {
  conn_.check(sqlite3_bind_null(stmt_, i), "bind");
  return *this;
}

Statement& Statement::bind(int i, const std::string& v) {
  conn_.check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_.fail(rc, sqlite3_sql(stmt_));
}

void Statement::reset() { sqlite3_reset(stmt_); }

std::string Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

Transaction::Transaction(Connection& c) : conn_(c) { c.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  // Never throws: a failed rollback leaves SQLite to roll back on close.
  if (open_) sqlite3_exec(conn_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  conn_.exec("COMMIT");
  open_ = false;
}

}  // namespace sql
}  // namespace kiln
