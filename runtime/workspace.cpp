#include "runtime/workspace.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::rt {
namespace {

struct Cache {
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<void*>> free_blocks;  // by exact size
  uint64_t cached = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may run during exit
  return *c;
}

}  // namespace

uint64_t workspace_cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.cached;
}

void workspace_release_all() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [bytes, blocks] : c.free_blocks)
    for (void* b : blocks) std::free(b);
  c.free_blocks.clear();
  c.cached = 0;
}

void set_workspace_slots(void* alloc_slot, void* free_slot) {
  if (alloc_slot) *static_cast<void**>(alloc_slot) = reinterpret_cast<void*>(&kiln_workspace_alloc);
  if (free_slot) *static_cast<void**>(free_slot) = reinterpret_cast<void*>(&kiln_workspace_free);
}

}  // namespace kiln::rt

extern "C" void* kiln_workspace_alloc(uint64_t bytes) {
  kiln::rt::Cache& c = kiln::rt::cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free_blocks.find(bytes);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* b = it->second.back();
      it->second.pop_back();
      c.cached -= bytes;
      return b;
    }
  }
  return std::aligned_alloc(64, bytes);
}

extern "C" void kiln_workspace_free(void* block, uint64_t bytes) {
  if (!block) return;
  kiln::rt::Cache& c = kiln::rt::cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached + bytes <= kiln::rt::kWorkspaceCacheBytes) {
      c.free_blocks[bytes].push_back(block);
      c.cached += bytes;
      return;
    }
  }
  std::free(block);
}
