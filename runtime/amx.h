// AMX tile data needs the process's permission on Linux (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, kernel 5.16 or newer): a tile
// instruction without it raises SIGILL. Kernels kiln tensorizes with AMX
// (compute/hw_instructions.h) run in whatever process loads them, so the
// loaders ask first.
#pragma once

namespace kiln::rt {

// Asks the kernel for AMX tile data once per process. True when granted or
// when this CPU has no AMX (nothing to ask for); false when the CPU has AMX
// and the kernel refused (an old kernel).
bool request_amx_tiles();

}  // namespace kiln::rt
