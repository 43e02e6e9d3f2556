// kiln's CUDA device prelude: the helpers every kernel the CUDA backend
// prints may use (KILN_SHARED, float2/float4 arithmetic, kiln_max/kiln_min,
// kiln_ld/kiln_st). The code generator puts it at the top of each source
// (codegen/cuda_module.h). It compiles as is under NVRTC, and as host C++
// after the emulation header (codegen/cuda_emulation.h), which defines
// KILN_CUDA_EMULATION and supplies the CUDA built-ins, KILN_SHARED and
// checked kiln_ld/kiln_st itself.
#pragma once

#include <string>

namespace kiln {

// The prelude's CUDA C text (ends with a newline).
const std::string& cuda_prelude();

// What kernels with f16 or bf16 data add after the prelude (only they, to
// keep f32 sources short): the 16-bit storage types kiln_half and
// kiln_bfloat16, conversions to and from f32 that round to nearest even as
// the interpreter does, and packed two- and four-element (half2) forms.
const std::string& cuda_narrow_float_prelude();

}  // namespace kiln
