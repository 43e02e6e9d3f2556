// The fibers part of the CUDA emulation header's text (cuda_emulation.h):
// each CUDA thread of a launch is a fiber of the launching thread, with a
// stack of its own; the launcher resumes, in thread order, every fiber
// whose wait is over (fiber_suspend, fiber_yield, run_fibers), and while a
// fiber runs its thread's state sits in the globals the emulation reads.
// It sits inside namespace kiln_emu, between the mbarriers and the
// launcher (which defines run_thread).
#pragma once

namespace kiln {

const char* cuda_emulation_fibers_text();

}  // namespace kiln
