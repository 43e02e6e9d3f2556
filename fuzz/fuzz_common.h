// Shared by the fuzz targets (fuzz/*.cpp): how a target reports a finding.
// A target catches kiln::UserError (bad input, the expected outcome) and
// calls kiln_fuzz_finding() for anything else: an InternalError, another
// exception, or a broken invariant. It aborts, which libFuzzer records as a
// crash (with the input) and the replay executables as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <typeinfo>


[[noreturn]] inline void kiln_fuzz_finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

#ifdef KILN_FUZZ_LIBFUZZER
// The libraries are instrumented with -fsanitize=undefined, which by default
// reports and goes on: make every report fatal, so that libFuzzer keeps the
// input (UBSAN_OPTIONS still overrides this).
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }
#endif

// try { ... } catch (const kiln::UserError&) { ... } KILN_FUZZ_CATCH_REST
#define KILN_FUZZ_CATCH_REST                                                                     \
  catch (const kiln::InternalError& e) {                                                          \
    kiln_fuzz_finding("InternalError", e.what());                                                 \
  }                                                                                               \
  catch (const std::exception& e) {                                                               \
    kiln_fuzz_finding("exception other than kiln::UserError", std::string(typeid(e).name()) + ": " + e.what()); \
  }                                                                                               \
  catch (...) {                                                                                   \
    kiln_fuzz_finding("non-std exception", "");                                                   \
  }
