// The precompiled emulation header (see cuda_emulation_pch.h).
#include "codegen/cuda_emulation_pch.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "codegen/cuda_emulation.h"
#include "codegen/subprocess.h"

namespace kiln {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// FNV-1a: a key that stays the same from one build of kiln to the next
// (std::hash need not).
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The first line of `cxx --version` ("" when it does not run): which
// compiler this is, and a new key when it is upgraded.
std::string compiler_version(const std::string& cxx) {
  std::string output;
  try {
    const int status = run_process({cxx, "--version"}, &output, "the host C++ compiler");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  } catch (const std::exception&) {
    return "";
  }
  return output.substr(0, output.find('\n'));
}

// A name next to `path` that no other thread or process writes.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Renames the finished file `tmp` to `path`, so that a reader sees the whole
// file or none; removes `tmp` when that fails (false, with *why).
bool publish(const std::string& tmp, const std::string& path, std::string* why) {
  if (std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  *why = "cannot rename '" + tmp + "' to '" + path + "'";
  std::remove(tmp.c_str());
  return false;
}

// Writes `text` to `path` through a temporary file. False (with *why) on failure.
bool write_atomically(const std::string& path, const std::string& text, std::string* why) {
  const std::string tmp = temporary_name(path);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.good()) {
      *why = "cannot write '" + tmp + "'";
      std::remove(tmp.c_str());
      return false;
    }
  }
  return publish(tmp, path, why);
}

// Runs the compiler on `argv` (which writes `tmp`), then publishes `tmp` as
// `path`; false (with *why) when either fails.
bool compile_to(const std::vector<std::string>& argv, const std::string& tmp, const std::string& path,
                const std::string& what, std::string* why) {
  std::string output;
  const int status = run_process(argv, &output, "the host C++ compiler");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = what + " failed: " + output;
    std::remove(tmp.c_str());
    return false;
  }
  return publish(tmp, path, why);
}

// Makes dir/kEmulationHeaderName, its .gch and the runtime's object when
// they are missing; false (with *why) when that fails.
bool make_pch(const std::string& dir, const std::string& cxx, const std::vector<std::string>& flags, std::string* why) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *why = "cannot create '" + dir + "': " + ec.message();
    return false;
  }
  const std::string header = dir + "/" + kEmulationHeaderName, pch = header + ".gch";
  const std::string runtime = dir + "/" + kEmulationRuntimeName;
  if (!std::filesystem::exists(header) && !write_atomically(header, cuda_emulation_header(), why)) return false;
  if (!std::filesystem::exists(runtime)) {
    // The header without kLinkedRuntimeFlag defines the runtime's functions
    // and variables: compiled alone, they are the runtime.
    const std::string tmp = temporary_name(runtime);
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-x", "c++", "-c", header, "-o", tmp});
    if (!compile_to(argv, tmp, runtime, "compiling the emulator's runtime from '" + header + "'", why)) return false;
    spdlog::debug("CUDA emulation: compiled its runtime into {}", runtime);
  }
  if (std::filesystem::exists(pch)) return true;
  const std::string tmp = temporary_name(pch);
  std::vector<std::string> argv = {cxx};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {kLinkedRuntimeFlag, "-x", "c++-header", header, "-o", tmp});
  if (!compile_to(argv, tmp, pch, "precompiling '" + header + "'", why)) return false;
  spdlog::debug("CUDA emulation: precompiled its header into {}", pch);
  return true;
}

}  // namespace

std::string kiln_cache_dir() {
  if (std::string d = env_or_empty("KILN_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env_or_empty("XDG_CACHE_HOME"); !d.empty()) return d + "/kiln";
  if (std::string d = env_or_empty("HOME"); !d.empty()) return d + "/.cache/kiln";
  return "";
}

std::string emulation_pch_dir(const std::string& cxx, const std::vector<std::string>& flags) {
  if (env_or_empty("KILN_EMULATION_PCH") == "0") return "";
  const std::string root = kiln_cache_dir();
  if (root.empty()) return "";

  // One answer per compiler, flags and cache directory for the process; the
  // lock also keeps its threads from precompiling the same header at once.
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::ostringstream id;
  id << cxx << '\n' << root;
  for (const std::string& f : flags) id << '\n' << f;
  std::lock_guard<std::mutex> lock(mu);
  // A known directory is checked again: a user may clear the cache while kiln runs.
  if (auto it = known.find(id.str());
      it != known.end() && (it->second.empty() || (std::filesystem::exists(it->second + "/" + kEmulationHeaderName) &&
                                                   std::filesystem::exists(it->second + "/" + kEmulationRuntimeName))))
    return it->second;

  std::string& dir = known[id.str()];
  dir.clear();
  const std::string version = compiler_version(cxx);
  if (version.find("clang") != std::string::npos || version.empty()) {
    spdlog::debug("CUDA emulation: no precompiled header for {} ('{}'): only GCC's are used", cxx, version);
    return dir;
  }
  uint64_t key = fnv1a(cuda_emulation_header());
  key = fnv1a(id.str() + '\n' + version, key);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  const std::string candidate = root + "/emulation-pch/" + hex;
  std::string why;
  if (make_pch(candidate, cxx, flags, &why)) {
    dir = candidate;
  } else {
    spdlog::debug("CUDA emulation: no precompiled header ({}); each module parses the header", why);
  }
  return dir;
}

void discard_emulation_pch_dir(const std::string& dir) {
  std::error_code ec;  // best effort: another process may be removing them too
  std::filesystem::remove(dir + "/" + kEmulationRuntimeName, ec);
  std::filesystem::remove(dir + "/" + kEmulationHeaderName + ".gch", ec);
}

}  // namespace kiln
