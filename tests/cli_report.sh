#!/usr/bin/env bash
# `kiln report` end to end: an HTML page from a small tuning database and a
# bench result; rendered in headless Chromium, whose screenshot must not be
# blank (skipped, exit 77, when chromium or python3 is missing); user errors
# exit 2.
# Usage: cli_report.sh path/to/kiln
set -u
KILN="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"

"$KILN" tune matmul:M=16,N=16,K=16 --trials 6 --batch 3 --db "$tmp/k.db" >/dev/null 2>&1 || fail "kiln tune"
printf 'matmul:M=16,N=16,K=16\n' > "$tmp/s.txt"
"$KILN" bench --suite "$tmp/s.txt" --db "$tmp/k.db" --baselines openblas --rounds 1 --repeat 1 --min-repeat-ms 1 \
  --json "$tmp/b.json" >/dev/null 2>&1 || fail "kiln bench"
out=$("$KILN" report --db "$tmp/k.db" --html "$tmp/r.html" --bench "$tmp/b.json" 2>&1) || fail "kiln report: $out"
grep -qF "1 tasks, bench table" <<<"$out" || fail "report summary: $out"
for want in "<svg" "<polyline" "matmul:M=16,N=16,K=16" "Benchmark: suite s" "best config"; do
  grep -qF "$want" "$tmp/r.html" || fail "report lacks '$want'"
done

# User errors.
out=$("$KILN" report --db "$tmp/none.db" --html "$tmp/x.html" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "missing database: exit $rc: $out"
echo '{"a": 1}' > "$tmp/notbench.json"
out=$("$KILN" report --db "$tmp/k.db" --html "$tmp/x.html" --bench "$tmp/notbench.json" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -qF "is not a \`kiln bench --json\` result" <<<"$out" || fail "bad bench file: exit $rc: $out"

# Rendering: the screenshot must have drawn something (non-white pixels).
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ] || ! command -v python3 >/dev/null; then
  skip "chromium or python3 not found: the rendering check did not run"
else
  timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --user-data-dir="$tmp/profile" --screenshot="$tmp/shot.png" --window-size=800,600 "file://$tmp/r.html" \
    >/dev/null 2>&1
  python3 - "$tmp/shot.png" <<'PY' || fail "the screenshot is blank or not a PNG"
# A minimal PNG reader (zlib only): counts pixels that are not white.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows, i = bytearray(stride), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
    rows.append(line)
    prev = line
dark = sum(1 for line in rows for x in range(0, stride, bpp) if min(line[x:x + 3]) < 200)
print(f"{w}x{h} screenshot, {dark} non-white pixels")
assert dark > 500, "blank page"
PY
fi

finish cli_report
