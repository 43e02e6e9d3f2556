// The mbarrier part of the CUDA emulation header's text (cuda_emulation.h):
// the shared-memory barriers of the mbarrier prelude
// (codegen/cuda_mbarrier_prelude.h) with their phases, arrival counts and
// parity waits. A completed phase orders the arrivals before it ahead of
// the waits that see it, for the race checks of the shared arrays. sm_90's
// transaction bytes and bulk copies complete a phase too. A wait
// that no thread is left to complete is reported as a deadlock, not a hang.
// It sits inside namespace kiln_emu, between the shared arrays and the
// launcher.
#pragma once

namespace kiln {

const char* cuda_emulation_mbarrier_text();

}  // namespace kiln
