// A lowered function: a flat loop nest over buffer pointers, ready for codegen.
#pragma once

#include <string>
#include <vector>

#include "compute/stmt.h"
#include "compute/tensor.h"

namespace kiln {

// One argument of a lowered function: a dense row-major buffer.
struct BufferArg {
  Var data;          // handle variable used by Load/Store in the body
  std::string name;  // the tensor's name
  DType dtype;       // element type
  std::vector<int64_t> shape;
};

struct LoweredFunc {
  std::string name;
  std::vector<BufferArg> args;  // inputs first, then outputs, in the order given to lower()
  Stmt body;
};

}  // namespace kiln
