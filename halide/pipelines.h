// Halide definitions (algorithms only, no schedules) of kiln's op families,
// for the Adams2019 autoscheduler to schedule. Coordinates are Halide's
// innermost-first: a row-major kiln array [A][B][C] is a Halide buffer
// (c, b, a). Every input and the output carry estimates of their full
// extents, which the autoscheduler needs.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::halide_baseline {

struct OpPipeline {
  std::vector<Halide::ImageParam> inputs;  // in kiln's input order
  Halide::Func output;
};

// `params` are the op's resolved integer parameters; shapes are kiln's
// row-major shapes. Throws std::invalid_argument for an op it does not know.
OpPipeline define_pipeline(const std::string& op, const std::map<std::string, int64_t>& params,
                           const std::vector<std::vector<int64_t>>& input_shapes,
                           const std::vector<int64_t>& output_shape);

}  // namespace kiln::halide_baseline
