// LLD's ELF driver in-process (see lld_link.h).
//
// LLD 14 as a library (lld/Common/Driver.h): lld::elf::link() keeps the link's
// state in globals plus a CommonLinkerContext; after a link, destroying that
// context (CommonLinkerContext::destroy(), what ld.lld's own lldMain does)
// resets it, and the next call starts clean -- LLVM's test suite runs every
// lld test that way (LLD_IN_TEST). So: one call at a time (a mutex), and
// destroy() after each. A fatal error (lld::fatal, e.g. a malformed input)
// calls exitLld(), which ends the process unless a CrashRecoveryContext is
// active, in which case it unwinds to it with longjmp; upstream's
// safeLldMain() then declares the linker unsafe to run again in that process
// (destructors were skipped), and so does this file.
#include "codegen/lld_link.h"

#include <lld/Common/CommonLinkerContext.h>
#include <lld/Common/Driver.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "base/error.h"

namespace kiln {
namespace lld_link {
namespace {

std::mutex g_mutex;
// Why LLD cannot run again in this process ("" while it can).
std::string g_spent;

}  // namespace

Result link_elf(const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> lock(g_mutex);
  internal_assert(g_spent.empty()) << "the in-process linker (LLD) cannot run again in this process: " << g_spent;

  // --threads=1: LLD's parallel algorithms run on the calling thread (and
  // LLVM's parallel::strategy, which this sets, is only used by LLD).
  std::vector<const char*> argv = {"ld.lld", "--threads=1"};
  for (const std::string& a : args) argv.push_back(a.c_str());

  Result result;
  llvm::raw_string_ostream out(result.output);
  bool linked = false;
  bool returned = false;
  int exit_code = 0;

  // Enabled only while LLD runs: its signal handlers (SIGSEGV...) are then
  // removed again, so kiln's own signal handling is unchanged.
  llvm::CrashRecoveryContext::Enable();
  {
    llvm::CrashRecoveryContext crc;
    returned = crc.RunSafely([&] {
      linked = lld::elf::link(argv, out, out, /*exitEarly=*/false, /*disableOutput=*/false);
    });
    if (!returned) exit_code = crc.RetCode;
  }
  bool destroyed = false;
  {
    llvm::CrashRecoveryContext crc;
    destroyed = crc.RunSafely([] { lld::CommonLinkerContext::destroy(); });
  }
  llvm::CrashRecoveryContext::Disable();
  out.flush();

  if (!returned) {
    std::string command = "ld.lld";
    for (const std::string& a : args) command += " " + a;
    if (exit_code > 128) {  // a signal: LLD crashed
      g_spent = "LLD crashed (signal " + std::to_string(exit_code - 128) + ") running: " + command;
      internal_error() << "the in-process linker (LLD) crashed with signal " << exit_code - 128
                       << " running: " << command << "\n" << result.output;
    }
    g_spent = "LLD stopped on a fatal error running: " + command + "\n" + result.output;
  }
  if (!destroyed && g_spent.empty()) g_spent = "LLD crashed while resetting its state after a link";
  result.ok = returned && linked;
  return result;
}

}  // namespace lld_link
}  // namespace kiln
