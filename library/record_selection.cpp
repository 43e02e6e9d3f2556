// Choosing a library's records (see record_selection.h).
#include "library/record_selection.h"

#include <optional>

#include "base/error.h"

namespace kiln {

namespace {

// Whether a task key ("WORKLOAD @ TARGET", Database::Record::task_key)
// names a target of `target`'s kind.
bool key_of_kind(const std::string& key, const Target& target) {
  const size_t at = key.rfind(" @ ");
  return at != std::string::npos && same_target_kind(key.substr(at + 3), target);
}

}  // namespace

bool same_target_kind(const std::string& record_target, const Target& target) {
  const std::string kind = record_target.substr(0, record_target.find(' '));
  return kind == target.kind;
}

std::map<std::string, Database::Record> best_records(Database& db, const std::string& db_path, const Target& target) {
  const std::vector<std::string> keys = db.task_keys();
  user_check(!keys.empty()) << "the tuning database '" << db_path
                            << "' has no records: tune the workloads first (kiln tune WORKLOAD... --db " << db_path
                            << (target.is_cuda() ? " --target cuda" : "") << ")";
  std::map<std::string, Database::Record> best;
  const std::string want = target.str();
  bool any_of_kind = false;  // a record of target's kind, with or without an error
  for (const std::string& key : keys) {
    std::optional<Database::Record> r = db.best(key);
    if (r && !same_target_kind(r->target, target)) continue;
    if (!r) {
      any_of_kind = any_of_kind || key_of_kind(key, target);
      continue;
    }
    any_of_kind = true;
    auto it = best.find(r->workload);
    if (it == best.end()) {
      best.emplace(r->workload, *r);
      continue;
    }
    const bool native = r->target == want, current_native = it->second.target == want;
    if ((native && !current_native) || (native == current_native && r->gflops > it->second.gflops)) it->second = *r;
  }
  if (best.empty()) {
    const std::string kind = target.is_cuda() ? "cuda" : "CPU (llvm)";
    user_check(!any_of_kind) << "the tuning database '" << db_path << "' has no error-free " << kind
                             << " records (every measured config failed)";
    user_error() << "the tuning database '" << db_path << "' has no " << kind << " records: "
                 << (target.is_cuda() ? "a cuda library is built from configs tuned for a GPU (kiln tune WORKLOAD... "
                                        "--target cuda --db "
                                      : "tune the workloads for a CPU first (kiln tune WORKLOAD... --db ")
                 << db_path << ")";
  }
  return best;
}

}  // namespace kiln
