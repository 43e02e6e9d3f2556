// Compilation targets, written as TVM-style strings:
//   llvm                                     the host (triple, CPU and features detected)
//   llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx2,+avx512f
//   llvm -mtriple=aarch64-linux-gnu
//   cuda -arch=sm_90                         (plain "cuda" is sm_90; sm_70 ... sm_90a)
// No LLVM types here; target.cpp asks LLVM's TargetRegistry to validate.
#pragma once

#include <string>

namespace kiln {

struct Target {
  std::string kind;    // "llvm" | "cuda"
  std::string triple;  // llvm: normalized target triple
  std::string cpu;     // llvm: -mcpu ("generic" when not given with an explicit triple)
  std::string attrs;   // llvm: -mattr feature list, "+f1,-f2,..."
  std::string arch;    // cuda: -arch, e.g. "sm_90"

  // Parses a target string. Unknown kinds or keys, malformed tokens, triples
  // LLVM has no backend for, unknown CPUs or features are user errors.
  // Without -mtriple, an llvm target is the host (CPU and features too, unless
  // -mcpu/-mattr are given).
  static Target parse(const std::string& s);
  // The machine this process runs on. LLVM 14 may name a newer CPU after an
  // older one (Zen 4 -> "znver3"), so the host's actual feature list is kept
  // in attrs: features the CPU name does not imply ("+avx512f", ...) and
  // features it implies that the host lacks ("-...").
  static Target host();

  // Canonical string; parse(str()) == *this.
  std::string str() const;
  // Widest natural SIMD width in bits: 512 with avx512f, 256 with avx2, else 128.
  int vector_bits() const;
  // Whether an llvm target has the CPU feature (an LLVM feature name such as
  // "avx512vnni"), implied by its CPU or listed in its -mattr.
  bool has_feature(const std::string& feature) const;
  // Whether code for this target runs in this process (llvm, host arch and OS).
  bool is_host() const;
  bool is_cuda() const { return kind == "cuda"; }

  bool operator==(const Target& o) const {
    return kind == o.kind && triple == o.triple && cpu == o.cpu && attrs == o.attrs && arch == o.arch;
  }
  bool operator!=(const Target& o) const { return !(*this == o); }
};

}  // namespace kiln
