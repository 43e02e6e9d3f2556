#!/usr/bin/env bash
# Writes dist/kiln-VERSION-linux-x86_64.tar.xz: a kiln that runs from any
# folder on x86-64 Linux with glibc >= 2.36 and none of Debian's LLVM, -dev
# or library packages installed.
#
#   bin/kiln, bin/kiln-serve (when the build has it)   stripped, RPATH $ORIGIN/../lib
#   lib/*.so.*      every shared library they load beyond glibc, libstdc++
#                   and libgcc_s (LLVM and LLD are linked into kiln statically)
#   lib/kiln/       the cuBLAS / cuDNN baseline plug-ins of kiln bench --target cuda
#                   (when the build has them; CUDA itself comes from the GPU machine)
#   share/kiln/     chart.min.js (Debian's libjs-chart.js), for kiln report
#   share/licenses/ the Debian copyright file of each package shipped or linked in
#
# Usage: scripts/bundle.sh            (build dir: build/, or $KILN_BUILD_DIR)
# Builds kiln (and kiln-serve) first; configures the build dir when it has
# none (the default static-LLVM build: cmake/kiln_llvm.cmake). Needs patchelf
# and xz (scripts/setup.sh installs them). KILN_BUNDLE_SMOKE=0 skips the
# smoke run of the unpacked bundle. Fails if the archive is over 40 MiB.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD="${KILN_BUILD_DIR:-build}"
LIMIT_MIB=40
die() { printf 'bundle: error: %b\n' "$*" >&2; exit 1; }
log() { echo "bundle: $*"; }

for tool in patchelf xz strip ldd readelf tar cmake ninja; do
  command -v "$tool" >/dev/null || die "'$tool' not found (scripts/setup.sh installs what kiln needs)"
done
[ "$(uname -m)" = x86_64 ] || die "the bundle is built on x86-64 Linux (this is $(uname -m))"

VERSION=$(sed -n 's/^project([[:space:]]*kiln[[:space:]][^)]*VERSION[[:space:]]\+\([0-9][0-9.]*\).*/\1/p' CMakeLists.txt | head -1)
[ -n "$VERSION" ] || die "cannot read the version from CMakeLists.txt's project(kiln VERSION ...)"
NAME="kiln-$VERSION-linux-x86_64"

# --- build -----------------------------------------------------------------
if [ ! -f "$BUILD/build.ninja" ]; then
  log "configuring $BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="${KILN_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
fi
if grep -q '^KILN_LLVM_SHARED:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  die "$BUILD links the shared libLLVM (KILN_LLVM_SHARED=ON); the bundle needs the default static build"
fi
targets=(kiln)
all_targets=$(ninja -C "$BUILD" -t targets all 2>/dev/null || true)
if grep -q '^kiln-serve:' <<<"$all_targets"; then targets+=(kiln-serve); fi
plugins=()  # the GPU baselines of kiln bench --target cuda, where the build has them
for p in cublas cudnn; do
  if grep -q "^kiln-contender-$p:" <<<"$all_targets"; then plugins+=("kiln-contender-$p"); fi
done
log "building ${targets[*]} in $BUILD"
ninja -C "$BUILD" -j "${KILN_JOBS:-$(nproc)}" "${targets[@]}" "${plugins[@]}" | { grep -E 'error|FAILED' || true; }

# --- stage -----------------------------------------------------------------
mkdir -p dist
STAGE=$(mktemp -d "$ROOT/dist/.stage-XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
PKG="$STAGE/$NAME"
mkdir -p "$PKG/bin" "$PKG/lib" "$PKG/share/licenses"

# What every x86-64 glibc system has: glibc's own libraries, and GCC's C++
# runtime (libstdc++, libgcc_s), which the brief of the bundle leaves to the system.
is_system_lib() {
  case "$1" in
    linux-vdso.so.*|ld-linux-x86-64.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*) return 0 ;;
    libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libmvec.so.*|libBrokenLocale.so.*|libnss_*) return 0 ;;
    libstdc++.so.*|libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

declare -A bundled=()   # soname -> the file it resolved to here
for t in "${targets[@]}"; do
  cp "$BUILD/$t" "$PKG/bin/$t"
  # ldd lists the whole dependency closure (libraries' own dependencies too).
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != "not" ] || die "$t: $soname is not found on this machine"
    is_system_lib "$soname" && continue
    bundled[$soname]=$path
  done < <(ldd "$BUILD/$t")
done
for soname in "${!bundled[@]}"; do
  cp -L "${bundled[$soname]}" "$PKG/lib/$soname"
  chmod 644 "$PKG/lib/$soname"
done

log "stripping"
strip --strip-unneeded "$PKG"/bin/* "$PKG"/lib/*
# DT_RPATH (not RUNPATH): used for the whole dependency tree and searched
# before LD_LIBRARY_PATH, so the bundle's libraries win over the system's.
for f in "$PKG"/bin/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$PKG"/lib/*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$f"; done

# Licenses: the Debian copyright file of each package a bundled library comes
# from, and of those linked in statically (LLVM, LLD, zlib, ncurses' libtinfo).
declare -A pkgs=([llvm-14-dev]=1 [liblld-14-dev]=1 [zlib1g]=1 [libtinfo6]=1)
# kiln report inlines Chart.js into its pages: ship it (bin/../share/kiln).
CHARTJS=/usr/share/javascript/chart.js/chart.min.js
[ -f "$CHARTJS" ] || die "$CHARTJS not found: kiln report needs Debian's libjs-chart.js (scripts/setup.sh installs it)"
mkdir -p "$PKG/share/kiln"
cp "$CHARTJS" "$PKG/share/kiln/chart.min.js"
pkgs[libjs-chart.js]=1
for soname in "${!bundled[@]}"; do
  real=$(readlink -f "${bundled[$soname]}")
  p=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$p" ] || p=$(dpkg -S "$(basename "$real")" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$p" ] && pkgs[$p]=1
done
for p in "${!pkgs[@]}"; do
  if [ -f "/usr/share/doc/$p/copyright" ]; then
    mkdir -p "$PKG/share/licenses/$p"
    cp "/usr/share/doc/$p/copyright" "$PKG/share/licenses/$p/copyright"
  fi
done
cat > "$PKG/README" <<EOF
kiln $VERSION for x86-64 Linux (glibc >= 2.36, libstdc++ from GCC >= 12).

  bin/kiln          the compiler and tuner (LLVM 14 and LLD linked in)
  bin/kiln-serve    the device server of a tuning pool (when present)
  lib/              the shared libraries they need beyond glibc and libstdc++
  lib/kiln/         the cuBLAS and cuDNN baselines of kiln bench --target cuda
                    (when built; they use the GPU machine's CUDA 13 and cuDNN 9)
  share/kiln/       Chart.js, which kiln report inlines into its pages
  share/licenses/   the licenses of what is shipped or linked in

Run from anywhere, e.g. bin/kiln tune matmul:M=512,N=512,K=512 --trials 64.
'kiln lib' compiles its C glue with clang (install clang for it).
EOF

# --- check: every dependency resolves inside the bundle or to the system's
# glibc / libstdc++, with no LD_LIBRARY_PATH.
for f in "$PKG"/bin/* "$PKG"/lib/*; do
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if is_system_lib "$soname"; then continue; fi
    case "$(readlink -f "$path")" in
      "$(readlink -f "$PKG/lib")"/*) ;;
      *) die "$(basename "$f"): $soname resolves to '$path', not into the bundle" ;;
    esac
  done < <(env -i PATH=/usr/bin:/bin ldd "$f")
done
# The GPU baseline plug-ins go to lib/kiln/, where kiln looks for contender
# plug-ins. They load cuBLAS, the CUDA runtime and cuDNN 9 from the GPU
# machine's own CUDA installation (LD_LIBRARY_PATH or ld.so.conf), which the
# bundle does not ship; kiln bench --target cuda names what is missing.
if [ ${#plugins[@]} -gt 0 ]; then
  mkdir -p "$PKG/lib/kiln"
  for t in "${plugins[@]}"; do strip --strip-unneeded -o "$PKG/lib/kiln/lib$t.so" "$BUILD/lib$t.so"; done
fi
glibc_needed=$(readelf -W --dyn-syms "$PKG"/bin/* "$PKG"/lib/*.so* "$PKG"/lib/kiln/*.so 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
if [ "$(printf '%s\n' GLIBC_2.36 "$glibc_needed" | sort -V | tail -1)" != GLIBC_2.36 ]; then
  die "the bundle needs $glibc_needed, newer than the promised glibc 2.36: build it on Debian 12"
fi
glibcxx_needed=$(readelf -W --dyn-syms "$PKG"/bin/* "$PKG"/lib/*.so* "$PKG"/lib/kiln/*.so 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)

if [ "${KILN_BUNDLE_SMOKE:-1}" != 0 ]; then
  log "smoke run: bin/kiln run matmul:M=16,N=16,K=16 --check (empty environment)"
  out=$(cd "$STAGE" && env -i HOME="$STAGE" PATH=/nonexistent "$PKG/bin/kiln" run matmul:M=16,N=16,K=16 --check 2>&1) ||
    die "the bundled kiln failed:\n$out"
  echo "$out" | grep -q 'correct: yes' || die "the bundled kiln did not check out:\n$out"
fi

# --- archive ---------------------------------------------------------------
OUT="dist/$NAME.tar.xz"
log "compressing $OUT (xz -9)"
tar -C "$STAGE" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:-$(date +%s)}" \
    -cf - "$NAME" | xz -9 -T2 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"

size=$(stat -c %s "$OUT")
echo
echo "$OUT: $(awk -v s="$size" 'BEGIN { printf "%.1f MiB", s / 1048576 }') (limit $LIMIT_MIB MiB)"
echo "unpacked: $(du -sh "$PKG" | cut -f1); needs $glibc_needed, $glibcxx_needed"
(cd "$STAGE" && find "$NAME/bin" -type f -printf '%s %p\n' | sort -k2 |
  awk '{ printf "  %6.1f MiB  %s\n", $1 / 1048576, $2 }')
(cd "$STAGE" && find "$NAME/lib" -type f -printf '%s %f\n' | sort -rn |
  awk '{ n++; t += $1; if (n <= 8) big = big sprintf("%s%s %.1f", n > 1 ? ", " : "", $2, $1 / 1048576) }
       END { printf "  %6.1f MiB  %s/lib/: %d libraries (largest, MiB: %s, ...)\n", t / 1048576, name, n, big }' name="$NAME")
echo "  (+ README, share/licenses/: ${#pkgs[@]} packages)"
if [ "$size" -gt $((LIMIT_MIB * 1024 * 1024)) ]; then
  die "$OUT is over $LIMIT_MIB MiB"
fi
