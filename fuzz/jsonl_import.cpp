// Fuzz target: JSON lines import of the tuning database
// (tuner/database.h, Database::import_jsonl; the format is described in
// tuner/database_jsonl.cpp), as `kiln db import` runs it.
//
// Input: the bytes of an export file (one JSON object per line). They are
// written to a temporary file and imported into a new, empty database in a
// temporary folder. Bad input must be a kiln::UserError (and then nothing
// is imported); anything else is a finding. Invariants checked after an
// import: the records read back (records(), best()) and the database's own
// export imports again, into a fresh database, with the same number of
// records.
//
// Seeds: fuzz/corpus/jsonl_import/; regressions (replayed by the ctest test
// fuzz:jsonl_import): tests/fuzz_regressions/jsonl_import/. Run:
//   ./fuzz-jsonl_import -max_total_time=600 -timeout=10 corpus/jsonl_import ../fuzz/corpus/jsonl_import
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "tuner/database.h"

namespace {

// A private folder, removed at exit.
const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-fuzz-jsonl-XXXXXX").string();
    if (!mkdtemp(&tmpl[0])) kiln_fuzz_finding("set-up", "cannot make a temporary folder");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(work_dir(), ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = (work_dir() / "in.jsonl").string();
  const std::string out = (work_dir() / "out.jsonl").string();
  const std::string db1 = (work_dir() / "a.db").string(), db2 = (work_dir() / "b.db").string();
  remove_db(db1);
  remove_db(db2);
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  kiln::Database::ImportStats stats;
  try {
    auto db = kiln::Database::open(db1);
    try {
      stats = db->import_jsonl(in);
    } catch (const kiln::UserError&) {
      if (!db->task_keys().empty()) kiln_fuzz_finding("failed import left records", "");
      return 0;
    }
    int64_t n = 0;
    for (const std::string& key : db->task_keys()) {
      n += static_cast<int64_t>(db->records(key).size());
      db->best(key);
    }
    if (n != stats.imported)
      kiln_fuzz_finding("record count", std::to_string(n) + " records read back, " + std::to_string(stats.imported) +
                                            " imported");
    if (db->export_jsonl(out) != n) kiln_fuzz_finding("export count", "");
  } catch (const kiln::UserError& e) {
    kiln_fuzz_finding("reading back an imported database failed", e.what());
  }
  KILN_FUZZ_CATCH_REST
  try {
    auto db = kiln::Database::open(db2);
    auto again = db->import_jsonl(out);
    if (again.imported != stats.imported)
      kiln_fuzz_finding("re-import count", std::to_string(again.imported) + " vs " + std::to_string(stats.imported));
  } catch (const kiln::UserError& e) {
    kiln_fuzz_finding("the export of an imported file does not import", e.what());
  }
  KILN_FUZZ_CATCH_REST
  return 0;
}
