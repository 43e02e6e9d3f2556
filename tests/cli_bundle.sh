#!/usr/bin/env bash
# What the portable bundle (scripts/bundle.sh) relies on, checked on the
# built kiln: LLVM and LLD are linked in statically (no libLLVM, libclang,
# z3, libxml2, ICU, libedit or libtinfo at run time), kernels are linked
# into shared objects in-process (no ld.lld executable is run, even when one
# is on PATH), and a triple whose backend is not linked in is a user error.
# The bundle itself (tar.xz) is built by hand, not here.
# Usage: cli_bundle.sh path/to/kiln
set -u
KILN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# The build's options, from the CMake cache next to the binary.
CACHE="$(dirname "$KILN")/CMakeCache.txt"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$CACHE" 2>/dev/null | head -1; }
SHARED_LLVM=$(cache_value KILN_LLVM_SHARED)
TARGETS=$(cache_value KILN_LLVM_TARGETS)

# 1. No LLVM-family library at run time (direct NEEDED entries, then the
#    whole closure as the loader resolves it).
forbidden='lib(LLVM|clang|lld|z3|xml2|icu[a-z]*|edit|tinfo|ncurses)[-.]'
if [ "$SHARED_LLVM" = ON ]; then
  skip "KILN_LLVM_SHARED=ON build: the static-LLVM checks did not run"
else
  needed=$(readelf -d "$KILN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if [ -z "$needed" ]; then
    fail "readelf -d $KILN shows no NEEDED entry"
  elif bad=$(grep -E "^$forbidden" <<<"$needed"); then
    fail "kiln links dynamically: $(echo $bad)"
  else
    ok
  fi
  closure=$(ldd "$KILN" 2>&1)
  if bad=$(grep -E "$forbidden|not found" <<<"$closure"); then
    fail "kiln's run-time libraries include: $bad"
  else
    ok
  fi
fi

# 2. In-process linking: tuning links every candidate into a .so. A decoy
#    ld.lld / ld.lld-14 first on PATH records any run of it, and fails.
mkdir -p "$TMPD/bin"
for name in ld.lld ld.lld-14 ld ld.gold ld.bfd clang clang-14 cc gcc; do
  printf '#!/bin/sh\necho "$0 $*" >> "%s/ran"\nexit 1\n' "$TMPD" >"$TMPD/bin/$name"
  chmod +x "$TMPD/bin/$name"
done
out=$(cd "$TMPD" && env PATH="$TMPD/bin" "$(command -v timeout)" 120 "$KILN" tune matmul:M=8,N=8,K=8 --trials 3 --db "$TMPD/t.db" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q "errors 0" <<<"$out"; then
  fail "kiln tune with no linker on PATH -> exit $rc, output:"
  echo "$out" | tail -8
else
  ok
fi
if [ -e "$TMPD/ran" ]; then
  fail "kiln ran external tools while linking: $(cat "$TMPD/ran")"
else
  ok
fi
# ... and the tuned kernel runs and checks out.
expect 0 "correct: yes" -- run matmul:M=8,N=8,K=8 --check --db "$TMPD/t.db" --repeat 1 --min-repeat-ms 0

# 3. Backends: the cross targets of the tests and docs are there; one left
#    out of KILN_LLVM_TARGETS is a user error that says so.
expect 0 "ret" -- source matmul:M=8,N=8,K=8 --asm --target "llvm -mtriple=aarch64-linux-gnu"
expect 0 "ret" -- source matmul:M=8,N=8,K=8 --asm --target "llvm -mtriple=riscv64-linux-gnu"
case ";$TARGETS;" in
  *";all;"* | *";Mips;"*) ;;
  *) if [ "$SHARED_LLVM" != ON ]; then
       expect 2 "built without LLVM's mips backend" -- source matmul:M=8,N=8,K=8 --target "llvm -mtriple=mips-linux-gnu"
     fi ;;
esac
expect 2 "unknown target triple 'nonsense-foo-bar'" -- source matmul:M=8,N=8,K=8 --target "llvm -mtriple=nonsense-foo-bar"

finish cli_bundle
