// Hand-written CUDA C built against the emulation header
// (codegen/cuda_emulation.h) and loaded, for the tests of the emulation and
// its preludes; and the text substitution their kernel templates use.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda_emulation.h"
#include "runtime/module.h"
#include "temp_dir.h"

namespace kiln::testing {

// A built and loaded emulated module.
struct Emulated {
  std::shared_ptr<rt::Module> module;
  kiln_packed_fn fn = nullptr;
  int32_t run(std::vector<void*> args) const { return fn(args.data()); }
  std::string error() const { return emulated_error(*module); }
};

// `code`: the preludes and kernels; `function` the entry point that runs
// `launches`.
inline Emulated build_emulated(const TempDir& dir, const std::string& function, const std::string& code,
                               std::vector<CudaKernelLaunch> launches) {
  CudaSource src;
  src.function = function;
  src.code = code;
  src.launches = std::move(launches);
  EmulatedModule m = build_emulated_module(src, dir.path + "/emu");
  REQUIRE(m.entry == function);
  REQUIRE(std::filesystem::exists(m.path));
  Emulated e;
  e.module = rt::Module::load(m.path);
  e.fn = e.module->get_function(function);
  REQUIRE(e.fn != nullptr);
  return e;
}

// A launch of `kernel` on a row of `blocks` blocks of `threads` threads.
inline CudaKernelLaunch row_launch(const std::string& kernel, int64_t blocks, int64_t threads,
                                   std::vector<CudaKernelLaunch::Param> params) {
  CudaKernelLaunch l;
  l.kernel = kernel;
  l.grid = {blocks, 1, 1};
  l.block = {threads, 1, 1};
  l.params = std::move(params);
  return l;
}

// n small integers (-11 to 11): sums of thousands of them are exact in f32.
inline std::vector<float> small_integers(size_t n) {
  std::vector<float> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(static_cast<int>(i * 7919 % 23) - 11);
  return a;
}

// Replaces each placeholder of `vars` (none a prefix of another) everywhere in `text`.
inline std::string substitute(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
      text.replace(at, name.size(), value);
  }
  return text;
}

}  // namespace kiln::testing
