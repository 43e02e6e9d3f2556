#include "runtime/amx.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kiln::rt {

namespace {

constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool cpu_has_amx_tile() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 24) & 1;  // CPUID.(EAX=7,ECX=0):EDX[24] AMX-TILE
}

}  // namespace

bool request_amx_tiles() {
  static const bool granted = [] {
    if (!cpu_has_amx_tile()) return true;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
}

}  // namespace kiln::rt
