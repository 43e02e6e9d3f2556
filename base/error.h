// The two error channels (DESIGN.md): user_error for bad input, which the CLI
// turns into exit code 2; internal_assert for kiln bugs.
//
//   user_error() << "split factor must be positive, got " << f;
//   user_check(f > 0) << "split factor must be positive, got " << f;
//   internal_assert(ptr != nullptr) << "context";
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

namespace detail {

template <class E>
class ErrorBuilder {
 public:
  ErrorBuilder(const char* file, int line, const char* cond) {
    if (cond) os_ << "internal error [" << file << ":" << line << "] " << cond << ": ";
  }
  template <class T>
  ErrorBuilder& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

// `Thrower() & builder << ...` : '&' binds looser than '<<', so the whole
// message is built first; the [[noreturn]] operator lets the compiler see
// that control does not continue.
struct Thrower {};
template <class E>
[[noreturn]] inline void operator&(Thrower, const ErrorBuilder<E>& b) {
  throw E(b.str());
}

}  // namespace detail
}  // namespace kiln

#define user_error() \
  ::kiln::detail::Thrower() & ::kiln::detail::ErrorBuilder<::kiln::UserError>(__FILE__, __LINE__, nullptr)
#define user_check(cond) \
  if (!(cond)) user_error()
#define internal_error() \
  ::kiln::detail::Thrower() & ::kiln::detail::ErrorBuilder<::kiln::InternalError>(__FILE__, __LINE__, "unreachable")
#define internal_assert(cond) \
  if (!(cond))                \
  ::kiln::detail::Thrower() & ::kiln::detail::ErrorBuilder<::kiln::InternalError>(__FILE__, __LINE__, #cond)
