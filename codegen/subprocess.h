// Running the external tools of code generation (the C compiler of
// `kiln lib`): finding them on PATH and running them with their output
// captured.
#pragma once

#include <string>
#include <vector>

namespace kiln {

// The path of `name` when it is an executable path (contains '/') or an
// executable in a PATH directory; "" when there is none.
std::string find_executable(const std::string& name);

// Runs argv (argv[0] is a path) with stdout and stderr both captured into
// *output; returns the wait status. `tool` names the program in the user
// error thrown when it cannot be started ("the linker", "the C compiler").
int run_process(const std::vector<std::string>& argv, std::string* output, const std::string& tool);

}  // namespace kiln
