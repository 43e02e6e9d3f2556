// Small RAII wrappers over the SQLite C API for the tuning database:
// a connection, a prepared statement and an IMMEDIATE transaction. Every
// SQLite failure becomes a UserError naming the database file (a full disk,
// a lock held past the busy timeout or a corrupt file are problems of the
// user's environment, not kiln bugs).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace kiln {
namespace sql {

class Connection {
 public:
  // Opens (creating if missing) the file read-write. Throws UserError when
  // the file cannot be opened or is read-only (unless read_only).
  // read_only: SQLITE_OPEN_READONLY, for readers that must not change the file.
  explicit Connection(const std::string& path, bool read_only = false);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs statements that return no rows.
  void exec(const std::string& sql);
  // Throws UserError with `what` and SQLite's message unless rc is OK/ROW/DONE.
  void check(int rc, const char* what) const;
  [[noreturn]] void fail(int rc, const char* what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(Connection& c, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, const std::string& v);
  Statement& bind_null(int i);
  // True when a row is available; false when the statement is done.
  bool step();
  void reset();  // ready to step again (bindings kept)

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const;

 private:
  Connection& conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy
// timeout), so two writers never deadlock upgrading a read lock. Rolls back
// unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Connection& c);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& conn_;
  bool open_ = true;
};

}  // namespace sql
}  // namespace kiln
