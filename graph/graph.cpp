#include "graph/graph.h"

#include <sstream>

#include "base/error.h"

namespace kiln::graph {

int64_t Value::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Value::bytes() const { return num_elements() * ((dtype.bits + 7) / 8); }

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Graph::describe(const Node& n) const {
  return n.op_type + " node '" + n.name + "' (opset " + std::to_string(opset) + ")";
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& what) {
  std::vector<int64_t> shape;
  std::stringstream ss(text);
  std::string part;
  auto bad = [&]() {
    user_error() << what << ": '" << text << "' is not a shape; write extents joined by 'x', e.g. 1x3x48x192";
  };
  if (text.empty()) bad();
  while (std::getline(ss, part, 'x')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12) bad();
    const int64_t d = std::stoll(part);
    if (d <= 0) bad();
    shape.push_back(d);
  }
  if (text.back() == 'x') bad();
  return shape;
}

int64_t checked_elements(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    user_check(d >= 0) << what << " has a negative extent " << d << " (shape " << shape_str(shape) << ")";
    user_check(d == 0 || n <= kMaxTensorElements / d) << what << " has shape " << shape_str(shape) << ", more than the "
                                                      << kMaxTensorElements << " elements kiln handles in one tensor";
    n *= d;
  }
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

}  // namespace kiln::graph
