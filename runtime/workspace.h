// The workspace cache behind kiln_workspace_alloc / kiln_workspace_free
// (c_api.h): a kernel's intermediate arrays (a padded input, a Winograd
// transform) are allocated and freed on every call; kept here, freed blocks
// are handed out again for the next call of the same size, so the kernel
// does not map and fault in fresh pages each time. At most
// kWorkspaceCacheBytes stay cached; the rest go back to the C library.
#pragma once

#include <cstdint>

#include "runtime/c_api.h"

namespace kiln::rt {

inline constexpr uint64_t kWorkspaceCacheBytes = uint64_t{256} << 20;

// Bytes cached now (for tests).
uint64_t workspace_cached_bytes();
// Frees every cached block.
void workspace_release_all();

// Points a loaded module's workspace slots (either may be null: an old
// module without them) at the cache.
void set_workspace_slots(void* alloc_slot, void* free_slot);

}  // namespace kiln::rt
