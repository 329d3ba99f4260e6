#!/usr/bin/env bash
# The report page renders in a real browser (registered by tests/tools/CMakeLists.txt when
# chromium is installed):
#
#   render_report.sh <meshsim> <chromium>
#
# Writes a small hand-written sweep results.json, runs `meshsim report results.json --html
# r.html`, renders the page with headless Chromium (--dump-dom and --screenshot) and fails unless
#   - the DOM has the three plots (<svg class="plot"> with ids step-time, memory, breakdown),
#     each with enough drawn elements (<rect>, <circle>, <path>, <line>);
#   - the screenshot is a PNG of more than a few KB and, when python3 is there, shows the bar
#     colors (fits, OOM, fastest) and the breakdown's categories.
# MESHSIM_RENDER_KEEP=1 keeps the temporary directory (r.html, dom.html, shot.png).
set -uo pipefail

if (($# != 2)); then
  echo "usage: render_report.sh <meshsim> <chromium>" >&2
  exit 2
fi
meshsim=$1
chromium=$2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-render.XXXXXX") || exit 1
if [[ ${MESHSIM_RENDER_KEEP:-0} == 1 ]]; then
  echo "temporary directory: $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
cd "$tmp" || exit 1

fail() {
  echo "render_report: FAILED: $*"
  exit 1
}

row() {  # tp pp cp dp vp mbs schedule microbatches step_time tokens mfu mem peak oom critical
  printf '{"tp": %s, "pp": %s, "cp": %s, "dp": %s, "vp": %s, "mbs": %s, "schedule": "%s", ' \
    "$1" "$2" "$3" "$4" "$5" "$6" "$7"
  printf '"cp_variant": "zigzag", "microbatches": %s, "step_time_s": %s, "tokens_per_s": %s, ' \
    "$8" "$9" "${10}"
  printf '"mfu": %s, "mem_gb": %s, "peak_rank": %s, "oom": %s, "critical_path": "%s"}' \
    "${11}" "${12}" "${13}" "${14}" "${15}"
}
{
  printf '{"schema_version": 1, "model": "llama3-70b", "hardware": "h100-sxm", "gpus": 1024, '
  printf '"seq": 8192, "global_batch": 512, "rows": [\n'
  row 8 4 1 32 2 1 interleaved 16 9.5 441505.7 0.41 61.2 0 false \
    "61% gemm, 14% attention_bwd, 9% p2p"
  printf ',\n'
  row 2 2 1 256 1 1 1f1b 2 null null null 142.0 0 true ""
  printf ',\n'
  row 8 8 1 16 1 1 1f1b 32 8.25 508400.5 0.47 48.0 0 false "55% gemm, 20% p2p, 10% dp_reduce"
  printf ',\n'
  row 4 8 1 32 1 1 zb-h1 16 11.0 381300.4 0.35 70.5 1 false "70% gemm, 30% attention_fwd"
  printf ',\n'
  row 1 8 1 128 1 1 1f1b 4 null null null 97.3 0 true ""
  printf ',\n'
  row 8 2 1 64 1 1 1f1b 8 12.75 328965.5 0.30 78.0 0 false \
    "40% gemm, 35% tp_allreduce, 5% p2p"
  printf ',\n'
  row 8 16 1 8 1 1 1f1b 64 10.0 419430.4 0.39 30.0 3 false "50% gemm, 25% p2p, 5% recompute"
  printf ',\n'
  row 8 4 2 16 2 1 interleaved 32 9.0 466033.8 0.43 55.5 0 false \
    "58% gemm, 16% attention_bwd, 12% cp_p2p"
  printf '\n]}\n'
} >results.json

"$meshsim" report results.json --html r.html >report.out 2>&1 ||
  fail "meshsim report exited $?: $(cat report.out)"
[[ -s r.html ]] || fail "meshsim report wrote no r.html"

url="file://$tmp/r.html"
browser=("$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --disable-dev-shm-usage --user-data-dir="$tmp/profile")
timeout 90 "${browser[@]}" --dump-dom "$url" >dom.html 2>chromium-dom.log ||
  fail "chromium --dump-dom exited $? (see below)
$(tail -n 20 chromium-dom.log)"
timeout 90 "${browser[@]}" --screenshot="$tmp/shot.png" --window-size=1200,2000 "$url" \
  >chromium-shot.log 2>&1 ||
  fail "chromium --screenshot exited $? (see below)
$(tail -n 20 chromium-shot.log)"

# The DOM the browser built: each plot with its drawn elements.
dom=$(tr '\n' ' ' <dom.html)
for spec in step-time:8 memory:10 pareto-memory:8 breakdown:5; do
  id=${spec%%:*}
  min=${spec##*:}
  [[ $dom == *"<svg class=\"plot\" id=\"$id\""* ]] || fail "the DOM has no <svg class=\"plot\" id=\"$id\">"
  body=${dom#*<svg class=\"plot\" id=\""$id"\"}
  body=${body%%</svg>*}
  n=$(grep -o -E '<(rect|circle|path|line)[ />]' <<<"$body" | wc -l)
  ((n > min)) || fail "svg#$id has $n drawn elements (<rect>/<circle>/<path>/<line>), expected more than $min"
  echo "svg#$id: $n drawn elements"
done
oom_bars=$(grep -o '<rect class="bar oom"' <<<"$dom" | wc -l)
((oom_bars == 2)) || fail "svg#memory has $oom_bars OOM bars, expected 2"

# The screenshot.
[[ -f shot.png ]] || fail "chromium wrote no screenshot"
size=$(wc -c <shot.png)
((size > 8000)) || fail "shot.png is only $size bytes"
[[ $(head -c 8 shot.png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
  fail "shot.png is not a PNG"
echo "shot.png: $size bytes"

if command -v python3 >/dev/null 2>&1; then
  python3 - shot.png <<'EOF' || fail "the screenshot does not show the plots' colors"
# Decode the PNG (zlib only, no imaging library) and count pixels of the plots' colors.
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
pos, idat, width, height, ctype, depth = 8, b"", 0, 0, 0, 0
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunk = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
    elif kind == b"IDAT":
        idat += chunk
    pos += 12 + length
channels = {2: 3, 6: 4}.get(ctype)
if depth != 8 or channels is None:
    print(f"render_report: PNG color type {ctype} depth {depth}: colors not checked")
    sys.exit(0)
raw = zlib.decompress(idat)
stride = width * channels
want = {"fits/bars": (0x4e, 0x79, 0xa7), "OOM": (0xe1, 0x57, 0x59),
        "fastest": (0x59, 0xa1, 0x4f), "breakdown p2p": (0xf2, 0x8e, 0x2b)}
wanted = {c: name for name, c in want.items()}
counts = {name: 0 for name in want}
prev = bytearray(stride)
i = 0
for _ in range(height):
    f = raw[i]
    line = bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    if f == 1:
        for x in range(channels, stride):
            line[x] = (line[x] + line[x - channels]) & 255
    elif f == 2:
        line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif f == 3:
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
    elif f == 4:
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, channels):
        name = wanted.get((line[x], line[x + 1], line[x + 2]))
        if name:
            counts[name] += 1
    prev = line
print("screenshot pixels:", ", ".join(f"{k} {v}" for k, v in counts.items()))
missing = [k for k, v in counts.items() if v < 50]
if missing:
    print("render_report: too few pixels of", ", ".join(missing))
    sys.exit(1)
EOF
else
  echo "python3 not found: screenshot colors not checked"
fi
echo "render_report: ok"
