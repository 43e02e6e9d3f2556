// Ahead-of-time paths of the LLVM backend: IR text, assembly, object files and
// shared objects (see build.h).
#include "codegen/build.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "codegen/llvm_codegen.h"
#include "codegen/llvm_support.h"
#include "base/error.h"

namespace kiln {

std::string c_identifier_chars(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return out;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

namespace {

void check_llvm_target(const Target& target) {
  user_check(target.kind == "llvm") << "the llvm backend cannot compile for target '" << target.str() << "' (kind "
                                    << target.kind << ")";
}

std::vector<char> machine_code(const std::vector<LoweredFunc>& funcs, const Target& target,
                               llvm_support::FileKind kind) {
  check_llvm_target(target);
  llvm::LLVMContext ctx;
  auto tm = llvm_support::create_target_machine(target);
  auto module = build_optimized_module(funcs, target, ctx, *tm);
  return llvm_support::emit_machine_code(*module, *tm, kind);
}

}  // namespace

std::string emit_llvm_ir(const std::vector<LoweredFunc>& funcs, const Target& target) {
  check_llvm_target(target);
  llvm::LLVMContext ctx;
  auto tm = llvm_support::create_target_machine(target);
  auto module = build_optimized_module(funcs, target, ctx, *tm);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  os.flush();
  return text;
}

std::string emit_assembly(const std::vector<LoweredFunc>& funcs, const Target& target) {
  std::vector<char> bytes = machine_code(funcs, target, llvm_support::FileKind::kAssembly);
  return std::string(bytes.begin(), bytes.end());
}

std::vector<char> emit_object(const std::vector<LoweredFunc>& funcs, const Target& target) {
  return machine_code(funcs, target, llvm_support::FileKind::kObject);
}

Artifact build_shared_object(const std::vector<LoweredFunc>& funcs, const Target& target, const std::string& out_dir) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<char> object = emit_object(funcs, target);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  user_check(!ec) << "cannot create output directory '" << out_dir << "': " << ec.message();
  static std::atomic<int> counter{0};
  std::string stem = out_dir + "/kiln_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  if (!funcs.empty()) stem += "_" + funcs[0].name;
  const std::string obj_path = stem + ".o";
  const std::string so_path = stem + ".so";
  {
    std::ofstream out(obj_path, std::ios::binary);
    user_check(out.good()) << "cannot write '" << obj_path << "'";
    out.write(object.data(), static_cast<std::streamsize>(object.size()));
    user_check(out.good()) << "cannot write '" << obj_path << "'";
  }
  try {
    link_shared_object({obj_path}, so_path, target);
  } catch (...) {
    std::filesystem::remove(obj_path, ec);
    throw;
  }
  std::filesystem::remove(obj_path, ec);

  Artifact a;
  a.path = so_path;
  for (const LoweredFunc& f : funcs) a.entry_points.push_back(f.name);
  a.target = target.str();
  a.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return a;
}

}  // namespace kiln
