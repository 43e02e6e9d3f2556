#!/usr/bin/env bash
# Proves README's set-up works on a fresh Debian 12 machine: builds a minimal
# bookworm root (debootstrap --variant=minbase, from the Debian mirror this
# machine's apt uses), copies the repository in (HEAD plus uncommitted
# changes: `git ls-files -co --exclude-standard`, so build/ etc. stay out),
# then runs README's two commands -- the first two command lines of its first
# ```sh block -- as root inside the root via chroot, with a clean environment.
# The root holds minbase plus only what scripts/setup.sh installs, so a
# package setup.sh forgets shows up as a failure here.
#
# Too slow for CI (debootstrap, ~1-2 GB of packages, a full build on this
# machine's cores, every test): run it by hand before resolving issues that
# change dependencies.
#
# Layout under the root folder (default: .fresh-root/ in the repository,
# ignored by git):
#   cache/   pristine minbase root tarball, reused between runs (every run
#            unpacks it afresh, so nothing from a previous run is left)
#   chroot/  the root the commands run in; repository at /root/kiln
#   logs/    debootstrap.log, cmd1.log, cmd2.log (kept after the run)
#
# Usage: scripts/check_fresh.sh [--keep] [--root DIR] [--refresh]
#   --keep      leave chroot/ (repository, build, packages) for inspection
#   --root DIR  root folder to use instead of .fresh-root/
#   --refresh   rebuild the cached pristine tarball with debootstrap
set -euo pipefail

SUITE=bookworm
PATH_IN_ROOT=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "check_fresh: $*"; }
die() { echo "check_fresh: error: $*" >&2; exit 2; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

REPO="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
KEEP=0
REFRESH=0
ROOT="$REPO/.fresh-root"
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1 ;;
    --refresh) REFRESH=1 ;;
    --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT="$2"; shift ;;
    --root=*) ROOT="${1#--root=}" ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, mount, chroot)"
mkdir -p "$ROOT"
ROOT="$(realpath "$ROOT")"
case "$ROOT" in /|/bin|/boot|/dev|/etc|/home|/lib*|/proc|/root|/run|/sbin|/sys|/tmp|/usr|/var)
  die "refusing to use '$ROOT' as the root folder" ;;
esac
CACHE="$ROOT/cache"
CHROOT="$ROOT/chroot"
LOGS="$ROOT/logs"
mkdir -p "$CACHE" "$LOGS"

exec 9>"$ROOT/.lock"
flock -n 9 || die "another check_fresh is using $ROOT"

# ---------------------------------------------------------------- README ----
# First two command lines of README's first ```sh block, trailing comments
# stripped, backslash continuations joined.
mapfile -t COMMANDS < <(awk '
  !inblock && /^```sh[[:space:]]*$/ { inblock = 1; next }
  inblock && /^```/ { exit }
  inblock {
    line = $0
    if (line ~ /\\[[:space:]]*$/) { sub(/\\[[:space:]]*$/, "", line); acc = acc line " "; next }
    line = acc line; acc = ""
    sub(/(^|[[:space:]]+)#.*$/, "", line)
    gsub(/^[[:space:]]+|[[:space:]]+$/, "", line)
    gsub(/[[:space:]]+/, " ", line)
    if (line != "" && n < 2) { print line; n++ }
  }' "$REPO/README.md")
[ ${#COMMANDS[@]} -eq 2 ] || die "could not find two commands in README.md's first \`\`\`sh block"

# ---------------------------------------------------------------- mirror ----
# Debian entries (suites $SUITE*) of this machine's apt sources, one-line
# format, deb822 and legacy; prints "URI SUITE COMPONENTS..." per suite.
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 4 {
      printf "%s %s", $2, $3; for (i = 4; i <= NF; i++) printf " %s", $i; print "" }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush(   n, s, i, u) {
        if (types ~ /(^| )deb( |$)/ && enabled != "no")
          for (u = 1; u <= nu; u++) for (i = 1; i <= ns; i++) print uris[u], suites[i], comps
        types = ""; enabled = ""; comps = ""; nu = 0; ns = 0
      }
      /^[[:space:]]*#/ { next }
      /^[[:space:]]*$/ { flush(); next }
      {
        key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[[:space:]]*/, "", val)
        if (key == "types") types = val
        else if (key == "enabled") enabled = tolower(val)
        else if (key == "components") comps = val
        else if (key == "uris") nu = split(val, uris, /[[:space:]]+/)
        else if (key == "suites") ns = split(val, suites, /[[:space:]]+/)
      }
      END { flush() }' "$f"
  done
}
ENTRIES="$(apt_entries | awk -v s="$SUITE" 'index($2, s) == 1' | awk '!seen[$0]++')"
MIRROR="$(awk -v s="$SUITE" '$2 == s { print $1; exit }' <<<"$ENTRIES")"
if [ -z "$MIRROR" ]; then
  MIRROR=http://deb.debian.org/debian
  ENTRIES="$MIRROR $SUITE main"
  say "no $SUITE entry in this machine's apt sources; using $MIRROR"
fi
ARCH="$(dpkg --print-architecture)"

# --------------------------------------------------------------- cleanup ----
mounts_under() {  # mount points at or below $1, deepest first
  awk -v r="$1" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

kill_root_processes() {  # processes (by pid) whose root is the chroot
  local p pid sig found=0
  for sig in TERM KILL; do
    found=0
    for p in /proc/[0-9]*; do
      pid="${p#/proc/}"
      [ "$(readlink "$p/root" 2>/dev/null)" = "$CHROOT" ] || continue
      kill -s "$sig" "$pid" 2>/dev/null && found=1
    done
    [ "$found" -eq 1 ] || return 0
    sleep 2
  done
}

unmount_all() {
  local m
  [ -d "$CHROOT" ] || return 0
  kill_root_processes
  for m in $(mounts_under "$CHROOT"); do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  [ -z "$(mounts_under "$CHROOT")" ]
}

remove_chroot() {
  [ -e "$CHROOT" ] || return 0
  if ! unmount_all; then
    echo "check_fresh: error: mounts left under $CHROOT, not removing it:" >&2
    mounts_under "$CHROOT" >&2
    return 1
  fi
  rm -rf --one-file-system "$CHROOT"
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$KEEP" -eq 1 ]; then
    unmount_all || say "warning: mounts left under $CHROOT"
    [ -d "$CHROOT" ] && say "root kept at $CHROOT (repository at $CHROOT/root/kiln)"
  else
    remove_chroot || rc=2
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------- pristine root ----
ensure_debootstrap() {
  command -v debootstrap >/dev/null && return 0
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1 || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  }
}

TARBALL="$CACHE/$SUITE-minbase-$ARCH.tar.gz"
KEYFILE="$TARBALL.key"
KEY="suite=$SUITE variant=minbase arch=$ARCH mirror=$MIRROR"

remove_chroot || exit 2
rm -f "$LOGS"/*.log
T0=$SECONDS
if [ "$REFRESH" -eq 0 ] && [ -f "$TARBALL" ] && [ "$(cat "$KEYFILE" 2>/dev/null)" = "$KEY" ]; then
  say "unpacking pristine $SUITE minbase root from $TARBALL"
  mkdir -p "$CHROOT"
  tar -C "$CHROOT" --numeric-owner --xattrs --xattrs-include='*' -xpzf "$TARBALL"
else
  ensure_debootstrap
  keyring=()
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] &&
    keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
  say "debootstrap --variant=minbase $SUITE from $MIRROR (log: $LOGS/debootstrap.log)"
  if ! debootstrap --variant=minbase --arch="$ARCH" "${keyring[@]}" "$SUITE" "$CHROOT" "$MIRROR" \
      >"$LOGS/debootstrap.log" 2>&1; then
    tail -n 40 "$LOGS/debootstrap.log"
    die "debootstrap failed (log: $LOGS/debootstrap.log)"
  fi
  rm -f "$TARBALL" "$KEYFILE"
  tar -C "$CHROOT" --numeric-owner --xattrs --xattrs-include='*' -czf "$TARBALL.partial" .
  mv "$TARBALL.partial" "$TARBALL"
  echo "$KEY" >"$KEYFILE"
fi
say "pristine root ready in $((SECONDS - T0)) s: $CHROOT"

# ------------------------------------------------------------- configure ----
# Same Debian suites as this machine (e.g. bookworm, -updates, -security);
# the package lists stay empty, as on a fresh install: setup.sh updates them.
{
  echo "# written by scripts/check_fresh.sh from this machine's apt sources"
  awk '{ printf "deb %s %s", $1, $2; for (i = 3; i <= NF; i++) printf " %s", $i; print "" }' <<<"$ENTRIES"
} >"$CHROOT/etc/apt/sources.list"
rm -f "$CHROOT/etc/resolv.conf"
cp -L /etc/resolv.conf "$CHROOT/etc/resolv.conf"
# No daemons started by package scripts inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$CHROOT/usr/sbin/policy-rc.d"
chmod 755 "$CHROOT/usr/sbin/policy-rc.d"
chmod 1777 "$CHROOT/tmp"

say "copying the repository (git ls-files -co --exclude-standard) to /root/kiln"
mkdir -p "$CHROOT/root/kiln"
set +e
(cd "$REPO" && git ls-files -co --exclude-standard -z |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi   # skip deleted files
  done | tar --null -T - --warning=no-file-changed -cf -) | tar -C "$CHROOT/root/kiln" -xf -
st=("${PIPESTATUS[@]}")
set -e
# GNU tar exits 1 when a file changed while being read (concurrent edits).
if [ "${st[0]}" -gt 1 ] || [ "${st[1]}" -ne 0 ]; then die "copying the repository failed"; fi
say "copied $(find "$CHROOT/root/kiln" -type f | wc -l) files"

mount -t proc proc "$CHROOT/proc"
mount --rbind /sys "$CHROOT/sys"
mount --make-rslave "$CHROOT/sys"
mount --rbind /dev "$CHROOT/dev"      # with /dev/pts, /dev/shm
mount --make-rslave "$CHROOT/dev"
# /tmp is the root's own directory (not the host's).

# -------------------------------------------------------------------- run ----
n=${#COMMANDS[@]}
failed=0
TOTAL0=$SECONDS
for i in "${!COMMANDS[@]}"; do
  cmd="${COMMANDS[$i]}"
  k=$((i + 1))
  log="$LOGS/cmd$k.log"
  say "[$k/$n] running: $cmd (log: $log)"
  t0=$SECONDS
  {
    echo "# check_fresh: $cmd"
    echo "# started $(date -u '+%Y-%m-%d %H:%M:%S UTC') in $CHROOT:/root/kiln"
  } >"$log"
  set +e
  # shellcheck disable=SC2016  # $1 expands inside the chroot's bash
  chroot "$CHROOT" /usr/bin/env -i PATH="$PATH_IN_ROOT" HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    /bin/bash -c 'cd /root/kiln && eval "$1"' check_fresh "$cmd" </dev/null >>"$log" 2>&1
  rc=$?
  set -e
  dt=$((SECONDS - t0))
  echo "# exit status $rc after $dt s" >>"$log"
  if [ "$rc" -eq 0 ]; then
    say "[$k/$n] $cmd : PASS in $dt s"
  else
    failed=$((failed + 1))
    say "[$k/$n] $cmd : FAIL (exit $rc) in $dt s"
    echo "----- last 40 lines of $log -----"
    tail -n 40 "$log"
    echo "----- end of $log -----"
  fi
done

total=$((SECONDS - TOTAL0))
if [ "$failed" -eq 0 ]; then
  say "PASS: $n/$n README commands passed on a fresh $SUITE minbase root in $total s (logs: $LOGS)"
  exit 0
fi
say "FAIL: $failed of $n README commands failed on a fresh $SUITE minbase root ($total s; logs: $LOGS)"
exit 1
