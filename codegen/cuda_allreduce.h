// The device helper behind a cross-thread reduction (ThreadAllReduceNode):
// kiln_allreduce, printed into a CUDA source after the arithmetic helpers
// when one of its kernels reduces across threads. The lowering picks the
// strategy (schedule/gpu_kernels.h, AllreduceStrategy) and sizes the shared
// scratch; the code generator passes both to the helper.
#pragma once

#include <string>

namespace kiln {

// The helper's CUDA C text (ends with a newline). Needs kiln_fmax/kiln_fmin.
const std::string& cuda_allreduce_helpers();

}  // namespace kiln
