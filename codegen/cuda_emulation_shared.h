// The middle part of the CUDA emulation header's text (cuda_emulation.h):
// block-shared arrays with their bounds and race checks (SharedBuffer, the
// KILN_SHARED and KILN_DYNAMIC_SHARED arrays, Ref, SharedPtr), and the
// per-thread queues that model cp.async copies into them, their commit
// groups and waits. It opens namespace kiln_emu, which the launcher's part
// that follows it closes.
#pragma once

namespace kiln {

const char* cuda_emulation_shared_text();

}  // namespace kiln
