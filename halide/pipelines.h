// Halide definitions (algorithms only, no schedules) of kiln's op families,
// for the Adams2019 autoscheduler to schedule. Coordinates are Halide's
// innermost-first: a row-major kiln array [A][B][C] is a Halide buffer
// (c, b, a).
//
// Halide computes some ops in layouts other than kiln's, the ones Halide's
// own apps use and Adams2019 schedules well: convolutions on a pre-padded,
// channels-innermost input with output-channels-innermost weights
// (apps/conv_layer), matmul against weights packed in column panels. Each
// such op comes with adapters, small Halide Funcs run once at set-up,
// outside timing, that move kiln's arrays into those layouts and the result
// back (as oneDNN's contender reorders into its blocked layouts). Every
// input and the output carry estimates and exact bounds of their full
// extents: the autoscheduler needs the estimates, and the JIT specializes
// for the sizes as oneDNN's JIT does.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::halide_baseline {

// A buffer's (min, extent) per Halide dimension, innermost first.
using Box = std::vector<std::pair<int, int>>;

// Moves one array between kiln's layout and the one Halide computes in.
struct Adapter {
  Halide::ImageParam source;  // the array in its own layout
  Halide::Func convert;       // undefined: the array is used as it is
  Box box;                    // where `convert` is realized
};

struct OpPipeline {
  std::vector<Halide::ImageParam> inputs;  // the algorithm's inputs, in kiln's input order
  std::vector<Adapter> prepare;            // kiln's input i -> inputs[i]
  Halide::Func output;                     // the algorithm
  Box output_box;                          // where `output` is realized
  Adapter finish;                          // `output`'s buffer -> kiln's output array
  std::string layout;                      // the layout Halide computes in, in words
};

// `params` are the op's resolved integer parameters; shapes are kiln's
// row-major shapes. Throws std::invalid_argument for an op it does not know.
OpPipeline define_pipeline(const std::string& op, const std::map<std::string, int64_t>& params,
                           const std::vector<std::vector<int64_t>>& input_shapes,
                           const std::vector<int64_t>& output_shape);

}  // namespace kiln::halide_baseline
