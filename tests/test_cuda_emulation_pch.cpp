// The precompiled emulation header and the runtime compiled once
// (codegen/cuda_emulation_pch.h): where they are made, that modules include
// the one, link the other and still compute the right thing, and that every
// way of not having them (switched off, no cache directory, a damaged or
// cleared cache) falls back to the header's text.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "codegen/cuda_emulation.h"
#include "codegen/cuda_emulation_pch.h"
#include "codegen/subprocess.h"
#include "runtime/module.h"
#include "support/scoped_env.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using kiln::testing::ScopedEnv;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// One block adds its thread indices into out[0]: 0 + 1 + ... + 63 = 2016.
EmulatedModule build_sum(const std::string& dir) {
  CudaSource src;
  src.function = "thread_sum";
  src.code = R"(
extern "C" __global__ void add_threads(int* out) {
  KILN_SHARED(int, part, 64);
  part[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int i = 0; i < 64; ++i) s += part[i];
    out[0] = s;
  }
}
)";
  CudaKernelLaunch l;
  l.kernel = "add_threads";
  l.grid = {1, 1, 1};
  l.block = {64, 1, 1};
  l.params = {{"int*", 0}};
  src.launches = {l};
  return build_emulated_module(src, dir);
}

int run_sum(const EmulatedModule& m) {
  auto module = rt::Module::load(m.path);
  kiln_packed_fn fn = module->get_function(m.entry);
  REQUIRE(fn != nullptr);
  int out = -1;
  void* args[] = {&out};
  REQUIRE(fn(args) == 0);
  return out;
}

// The module's source, kept next to its .so.
std::string source_path(const EmulatedModule& m) { return m.path.substr(0, m.path.size() - 3) + ".cpp"; }
std::string module_source(const EmulatedModule& m) { return read_file(source_path(m)); }

// What `nm -C <options> file` prints (binutils come with the compiler).
std::string symbols(const std::vector<std::string>& options, const std::string& file) {
  const std::string nm = find_executable("nm");
  REQUIRE_FALSE(nm.empty());
  std::vector<std::string> argv = {nm, "-C"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(file);
  std::string out;
  REQUIRE(run_process(argv, &out, "nm") == 0);
  return out;
}

// A module's exported symbols are its entry points (kiln_emu_last_error
// among them), none of the emulator's: every module keeps its own.
bool exports_only_entry_points(const EmulatedModule& m) {
  const std::string exported = symbols({"-D", "--defined-only"}, m.path);
  return exported.find("kiln_emu_last_error") != std::string::npos && exported.find("kiln_emu::") == std::string::npos;
}

bool inlines_header(const std::string& source) {
  return source.find("namespace kiln_emu") != std::string::npos &&
         source.find(std::string("#include \"") + kEmulationHeaderName) == std::string::npos;
}

// GCC's precompiled headers are the only ones used; skips the test otherwise.
#define SKIP_WITHOUT_GCC()                                                                             \
  do {                                                                                                 \
    const std::string cxx = host_cxx_compiler();                                                       \
    if (cxx.empty()) KILN_SKIP("no host C++ compiler for the emulated kernels");                       \
    std::string version;                                                                               \
    run_process({cxx, "--version"}, &version, "the host C++ compiler");                                \
    if (version.find("clang") != std::string::npos)                                                    \
      KILN_SKIP("the host C++ compiler is clang: kiln precompiles the emulation header for GCC only"); \
  } while (0)

const std::vector<std::string>& kFlags = emulated_module_flags();

}  // namespace

TEST_CASE("kiln's cache directory: KILN_CACHE_DIR, else XDG_CACHE_HOME/kiln, else HOME/.cache/kiln",
          "[codegen][cuda][emulation]") {
  ScopedEnv home("HOME", std::string("/home/ada"));
  {
    ScopedEnv cache("KILN_CACHE_DIR", std::string("/var/cache/k"));
    ScopedEnv xdg("XDG_CACHE_HOME", std::string("/xdg"));
    CHECK(kiln_cache_dir() == "/var/cache/k");
  }
  {
    ScopedEnv cache("KILN_CACHE_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::string("/xdg"));
    CHECK(kiln_cache_dir() == "/xdg/kiln");
  }
  {
    ScopedEnv cache("KILN_CACHE_DIR", std::string(""));
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(kiln_cache_dir() == "/home/ada/.cache/kiln");
    ScopedEnv no_home("HOME", std::nullopt);
    CHECK(kiln_cache_dir().empty());
  }
}

TEST_CASE("emulated modules include the header precompiled once in kiln's cache, and compute as before",
          "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_GCC();
  testing::TempDir dir("kiln_emu_pch");
  ScopedEnv cache("KILN_CACHE_DIR", dir / "cache");
  ScopedEnv on("KILN_EMULATION_PCH", std::nullopt);

  const EmulatedModule first = build_sum(dir / "a");
  CHECK(run_sum(first) == 2016);
  const std::string pch_dir = emulation_pch_dir(host_cxx_compiler(), kFlags);
  REQUIRE_FALSE(pch_dir.empty());
  CHECK(std::filesystem::path(pch_dir).parent_path() == std::filesystem::path(dir / "cache/emulation-pch"));
  const std::string header = pch_dir + "/" + kEmulationHeaderName;
  CHECK(read_file(header) == cuda_emulation_header());
  CHECK(std::filesystem::file_size(header + ".gch") > 0);
  const std::string runtime = pch_dir + "/" + kEmulationRuntimeName;
  CHECK(std::filesystem::file_size(runtime) > 0);
  const std::string source = module_source(first);
  CHECK_FALSE(inlines_header(source));
  CHECK(source.find("// kiln: compile with -DKILN_EMU_LINKED_RUNTIME -iquote " + pch_dir + ", link " + runtime) !=
        std::string::npos);

  // Such a module leaves the runtime's functions to the runtime's object:
  // compiled alone, it needs the launcher; the object defines it.
  const std::string object = dir / "alone.o";
  std::vector<std::string> argv = {host_cxx_compiler()};
  argv.insert(argv.end(), kFlags.begin(), kFlags.end());
  argv.insert(argv.end(), {kLinkedRuntimeFlag, "-iquote", pch_dir, "-H", "-c", "-o", object, source_path(first)});
  std::string output;
  REQUIRE(run_process(argv, &output, "the host C++ compiler") == 0);
  // -H: GCC marks a precompiled header it used with '!' (one that does not
  // match the module's flags would be parsed from the text, slowly).
  CHECK(output.find("! " + header + ".gch") != std::string::npos);
  const std::string launcher = "kiln_emu::launch(dim3, dim3, char const*, std::function<void ()>";
  CHECK(symbols({}, object).find(" U " + launcher) != std::string::npos);
  CHECK(symbols({}, runtime).find(" T " + launcher) != std::string::npos);

  // The same compiler and flags: the same directory, the header made once.
  const auto made = std::filesystem::last_write_time(header + ".gch");
  const EmulatedModule second = build_sum(dir / "b");
  CHECK(run_sum(second) == 2016);
  CHECK(emulation_pch_dir(host_cxx_compiler(), kFlags) == pch_dir);
  CHECK(std::filesystem::last_write_time(header + ".gch") == made);

  // Every module keeps an emulator of its own: none of the runtime's
  // functions and variables is exported, so no module binds to another's.
  CHECK(exports_only_entry_points(second));

  // Other flags are another key.
  std::vector<std::string> o2 = kFlags;
  o2[1] = "-O2";
  const std::string other = emulation_pch_dir(host_cxx_compiler(), o2);
  CHECK_FALSE(other.empty());
  CHECK(other != pch_dir);
}

TEST_CASE("a damaged or cleared precompiled header costs time, never a module", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_GCC();
  testing::TempDir dir("kiln_emu_pch");
  ScopedEnv cache("KILN_CACHE_DIR", dir / "cache");
  ScopedEnv on("KILN_EMULATION_PCH", std::nullopt);
  CHECK(run_sum(build_sum(dir / "a")) == 2016);
  const std::string pch_dir = emulation_pch_dir(host_cxx_compiler(), kFlags);
  REQUIRE_FALSE(pch_dir.empty());

  // GCC ignores a .gch it cannot read and parses the header next to it.
  std::ofstream(pch_dir + "/" + kEmulationHeaderName + ".gch", std::ios::binary | std::ios::trunc)
      << "not a precompiled header";
  const EmulatedModule damaged = build_sum(dir / "b");
  CHECK_FALSE(inlines_header(module_source(damaged)));
  CHECK(run_sum(damaged) == 2016);

  // A cache cleared while kiln runs is made again, all of it or the runtime alone.
  std::filesystem::remove_all(dir / "cache");
  const EmulatedModule cleared = build_sum(dir / "c");
  CHECK(run_sum(cleared) == 2016);
  CHECK(std::filesystem::exists(pch_dir + "/" + kEmulationHeaderName + ".gch"));
  CHECK(std::filesystem::exists(pch_dir + "/" + kEmulationRuntimeName));
  std::filesystem::remove(pch_dir + "/" + kEmulationRuntimeName);
  const EmulatedModule no_runtime = build_sum(dir / "d");
  CHECK(run_sum(no_runtime) == 2016);
  CHECK(std::filesystem::exists(pch_dir + "/" + kEmulationRuntimeName));

  // A damaged runtime object: the module is built from the header's text,
  // and the cache made again for the next one.
  const std::string runtime = pch_dir + "/" + kEmulationRuntimeName;
  std::ofstream(runtime, std::ios::binary | std::ios::trunc) << "not an object";
  const EmulatedModule damaged_runtime = build_sum(dir / "e");
  CHECK(inlines_header(module_source(damaged_runtime)));
  CHECK(run_sum(damaged_runtime) == 2016);
  const EmulatedModule remade = build_sum(dir / "f");
  CHECK_FALSE(inlines_header(module_source(remade)));
  CHECK(run_sum(remade) == 2016);
  CHECK(read_file(runtime) != "not an object");
}

TEST_CASE("without a precompiled header, modules carry the header's text", "[codegen][cuda][emulation]") {
  if (host_cxx_compiler().empty()) KILN_SKIP("no host C++ compiler for the emulated kernels");
  testing::TempDir dir("kiln_emu_pch");
  SECTION("KILN_EMULATION_PCH=0") {
    ScopedEnv cache("KILN_CACHE_DIR", dir / "cache");
    ScopedEnv off("KILN_EMULATION_PCH", std::string("0"));
    CHECK(emulation_pch_dir(host_cxx_compiler(), kFlags).empty());
    const EmulatedModule m = build_sum(dir / "a");
    CHECK(inlines_header(module_source(m)));
    CHECK(run_sum(m) == 2016);
    CHECK(exports_only_entry_points(m));
    CHECK_FALSE(std::filesystem::exists(dir / "cache"));
  }
  SECTION("a cache directory that cannot be made") {
    ScopedEnv cache("KILN_CACHE_DIR", dir.write("a-file", "x") + "/cache");
    ScopedEnv on("KILN_EMULATION_PCH", std::nullopt);
    CHECK(emulation_pch_dir(host_cxx_compiler(), kFlags).empty());
    const EmulatedModule m = build_sum(dir / "b");
    CHECK(inlines_header(module_source(m)));
    CHECK(run_sum(m) == 2016);
  }
}
