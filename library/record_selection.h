// Which tuning-database record each workload of a library uses (`kiln lib`,
// CPU and cuda alike).
#pragma once

#include <map>
#include <string>

#include "codegen/target.h"
#include "tuner/database.h"

namespace kiln {

// The best error-free record of each workload among the records of
// `target`'s kind (llvm records for a CPU library, cuda records for a cuda
// one: a config means nothing to the other kind's template): one measured
// on `target` itself when there is one, else the fastest of any target of
// that kind (re-applied and re-lowered for `target` by the caller).
// user_error when the database has no records, no records of that kind, or
// none without an error.
std::map<std::string, Database::Record> best_records(Database& db, const std::string& db_path, const Target& target);

// Whether `record_target` (a record's target string) is of `target`'s kind.
bool same_target_kind(const std::string& record_target, const Target& target);

}  // namespace kiln
