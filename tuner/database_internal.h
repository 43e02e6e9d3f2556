// Helpers shared by database.cpp and database_jsonl.cpp (not a public API).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/database.h"

namespace kiln {
namespace sql {
class Statement;
}

namespace db_detail {

// INSERT of one record; parameters as bound by insert_record.
extern const char* const kInsertRecord;
void insert_record(sql::Statement& ins, int64_t workload_id, const Database::Record& r);
// The stored text of a sample list (also the duplicate test of imports).
std::string samples_text(const std::vector<double>& samples);
// A JSON array of numbers (null reads as NaN); UserError otherwise.
std::vector<double> parse_samples(const nlohmann::json& j);
// A record's kernel resources as stored (a JSON array of objects) and back;
// UserError on a malformed array.
nlohmann::json resources_json(const std::vector<KernelResources>& resources);
std::vector<KernelResources> parse_resources(const nlohmann::json& j);

}  // namespace db_detail
}  // namespace kiln
