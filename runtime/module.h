// Module: a kernel shared object (built by codegen, possibly on another
// machine) loaded with dlopen. Loading wires the module's parallel-for slot to
// this process's thread pool (runtime/c_api.h), so the module needs no symbol
// from its host.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/c_api.h"

namespace kiln::rt {

// A shared object could not be loaded; what() carries dlerror()'s text.
class LoadError : public std::runtime_error {
 public:
  explicit LoadError(const std::string& msg) : std::runtime_error(msg) {}
};

class Module {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws LoadError on failure. Sets the
  // module's `void* __kiln_parallel_for` to kiln_parallel_for when present.
  static std::shared_ptr<Module> load(const std::string& path);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel `name` (int32_t name(void** args)), or nullptr if the module has
  // no such symbol. Valid only while this Module is alive.
  kiln_packed_fn get_function(const std::string& name) const;

  // The address of any symbol (function or data), or nullptr.
  void* get_symbol(const std::string& name) const;

  const std::string& path() const { return path_; }

 private:
  Module(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
};

}  // namespace kiln::rt
