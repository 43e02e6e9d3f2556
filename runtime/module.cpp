// Loading kernel shared objects with dlopen.
#include "runtime/module.h"

#include <dlfcn.h>

#include "runtime/amx.h"
#include "runtime/thread_pool.h"
#include "runtime/workspace.h"

namespace kiln::rt {

std::shared_ptr<Module> Module::load(const std::string& path) {
  request_amx_tiles();  // its kernels may be tensorized with AMX
  dlerror();  // clear any stale error
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    throw LoadError("cannot load kernel module '" + path + "': " + (err ? err : "unknown dlopen error"));
  }
  std::shared_ptr<Module> m(new Module(handle, path));
  if (void* slot = m->get_symbol(KILN_PARALLEL_FOR_SLOT)) {
    kiln_parallel_for_fn fn = &kiln_parallel_for;
    *static_cast<void**>(slot) = reinterpret_cast<void*>(fn);
  }
  set_workspace_slots(m->get_symbol(KILN_WORKSPACE_ALLOC_SLOT), m->get_symbol(KILN_WORKSPACE_FREE_SLOT));
  return m;
}

Module::~Module() { dlclose(handle_); }

void* Module::get_symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

kiln_packed_fn Module::get_function(const std::string& name) const {
  return reinterpret_cast<kiln_packed_fn>(get_symbol(name));
}

}  // namespace kiln::rt
