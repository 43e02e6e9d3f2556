#include "schedule/gpu_limits.h"

#include <vector>

#include "base/error.h"

namespace kiln {

namespace {

struct ArchRow {
  const char* arch;
  int sm_version;
  int64_t shared_optin_kib, shared_per_sm_kib, threads_per_sm;
  int blocks_per_sm, sm_count;
};

// CUDA C Programming Guide, "Technical Specifications per Compute
// Capability"; SM counts of V100, Jetson AGX Xavier, T4, A100, A10, Jetson
// AGX Orin (64 GB), L4 and H100 SXM. Every architecture of the table has
// 64K 32-bit registers per SM and 255 per thread (GpuLimits' defaults).
// sm_72 (Xavier) has Volta's SM: 96 KiB of shared memory per SM and per
// block, 2048 threads and 32 blocks per SM; sm_87 (Orin) has A100's shared
// memory (164 KiB per SM, 163 KiB per block) and sm_86's 1536 threads and
// 16 blocks per SM.
const std::vector<ArchRow>& arch_table() {
  static const std::vector<ArchRow> rows = {
      {"sm_70", 70, 96, 96, 2048, 32, 80},     {"sm_72", 72, 96, 96, 2048, 32, 8},
      {"sm_75", 75, 64, 64, 1024, 16, 40},     {"sm_80", 80, 163, 164, 2048, 32, 108},
      {"sm_86", 86, 99, 100, 1536, 16, 72},    {"sm_87", 87, 163, 164, 1536, 16, 16},
      {"sm_89", 89, 99, 100, 1536, 24, 58},    {"sm_90", 90, 227, 228, 2048, 32, 132},
      {"sm_90a", 90, 227, 228, 2048, 32, 132},
  };
  return rows;
}

}  // namespace

std::string known_gpu_archs() {
  std::string s;
  for (auto& r : arch_table()) s += (s.empty() ? "" : ", ") + std::string(r.arch);
  return s;
}

bool is_known_gpu_arch(const std::string& arch) {
  for (auto& r : arch_table())
    if (arch == r.arch) return true;
  return false;
}

GpuLimits gpu_limits_for_arch(const std::string& arch) {
  for (auto& r : arch_table()) {
    if (arch != r.arch) continue;
    GpuLimits g;
    g.arch = r.arch;
    g.sm_version = r.sm_version;
    g.max_shared_optin_per_block = r.shared_optin_kib * 1024;
    g.max_shared_per_sm = r.shared_per_sm_kib * 1024;
    g.max_threads_per_sm = r.threads_per_sm;
    g.max_blocks_per_sm = r.blocks_per_sm;
    g.sm_count = r.sm_count;
    return g;
  }
  user_error() << "unknown CUDA architecture '" << arch << "' (kiln knows " << known_gpu_archs() << ")";
}

}  // namespace kiln
