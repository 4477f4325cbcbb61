#!/usr/bin/env bash
# usage: tests/tools/screenshots.sh [BUILD] [DOCS]   (defaults: build, docs)
# Regenerates the pictures of the docs from the current build, rendered by headless
# Chromium as a reader's browser draws them:
#   DOCS/heatmap-4x4.svg     model's heatmap of an all-to-all on an open 4x4 (the file itself)
#   DOCS/heatmap-3d.png      a 3D heatmap (4x4x2, one panel per z plane) rendered
#   DOCS/trace-4x4.png       docs/trace-view.html drawing a modeled all-gather trace
#   DOCS/trace-train.png     the same viewer drawing a train trace with --trace-measured
#                            under mpirun: the modeled and the measured clock, each its axis
#   DOCS/trace-speedscope.png  speedscope (SPEEDSCOPE=its dist/release folder, from
#                            'npm install speedscope'; skipped without it) drawing chip 0's
#                            collectives track of a modeled psum
# Needs chromium (Debian: apt-get install chromium) and python3; without chromium it says so
# and exits 0 (the pictures are for the docs, no test depends on them).  pngquant, when
# present, shrinks the PNGs.  Look at every picture after running it.
set -eu
build=${1:-build}
docs=${2:-docs}
tpuemu=$(cd "$build" && pwd)/tpuemu
docs=$(cd "$docs" && pwd)
viewer=$(cd "$(dirname "$0")/../../docs" && pwd)/trace-view.html
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "screenshots.sh: no chromium on this machine (apt-get install chromium): nothing done"
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# shot URL WxH OUT: one screenshot (the virtual-time budget lets the page's fetch and
# drawing finish first).
shot() {
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=8000 \
        --window-size="$2" --screenshot="$3" "$1" >/dev/null 2>&1
    if command -v pngquant >/dev/null; then
        pngquant --force --skip-if-larger --output "$3" "$3" || true
    fi
    echo "wrote $3 ($(wc -c <"$3") bytes)"
}

# serve DIR PORT: a local HTTP server on DIR (the viewer fetches its trace).
serve() {
    (cd "$1" && exec python3 -m http.server "$2" --bind 127.0.0.1 >/dev/null 2>&1) &
    pids+=($!)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$2/')" \
            2>/dev/null && return 0
        sleep 0.3
    done
    echo "screenshots.sh: the HTTP server on port $2 did not start" >&2
    exit 1
}

# The heatmaps: the 2D one is the file itself, the 3D one rendered.
"$tpuemu" model --topology 4x4 --collective all-to-all --bytes 1M --heatmap "$docs/heatmap-4x4.svg" >/dev/null
echo "wrote $docs/heatmap-4x4.svg"
"$tpuemu" model --topology 4x4x2 --collective all-to-all --bytes 1M --heatmap "$tmp/h3d.svg" >/dev/null
size=$(python3 -c "import re,sys; s=open(sys.argv[1]).read(600); print('%s,%s' % re.search(r'width=\"(\d+)\" height=\"(\d+)\"', s).groups())" "$tmp/h3d.svg")
shot "file://$tmp/h3d.svg" "$size" "$docs/heatmap-3d.png"

# The traces in the shipped viewer.
cp "$viewer" "$tmp/"
"$tpuemu" model --topology 4x4 --wrap all --collective all-gather --bytes 256K --trace "$tmp/t4x4.json" >/dev/null
mpirun --oversubscribe --mca mpi_yield_when_idle 1 -n 4 "$tpuemu" train --topology 2x2 \
    --mesh data=2,model=2 --steps 2 --hidden 256 --batch 64 --quiet --trace "$tmp/train.json" \
    --trace-measured >/dev/null
port=$((20000 + $$ % 20000))
serve "$tmp" "$port"
shot "http://127.0.0.1:$port/trace-view.html?trace=t4x4.json" 1180,760 "$docs/trace-4x4.png"
shot "http://127.0.0.1:$port/trace-view.html?trace=train.json" 1180,760 "$docs/trace-train.png"

# speedscope, when given.
if [ -n "${SPEEDSCOPE:-}" ] && [ -f "$SPEEDSCOPE/index.html" ]; then
    mkdir "$tmp/ss"
    cp -r "$SPEEDSCOPE"/. "$tmp/ss/"
    "$tpuemu" model --topology 4x4 --wrap all --collective psum --bytes 256K --trace "$tmp/ss/psum.json" >/dev/null
    serve "$tmp/ss" $((port + 1))
    shot "http://127.0.0.1:$((port + 1))/index.html#profileURL=http://127.0.0.1:$((port + 1))/psum.json" \
        1180,200 "$docs/trace-speedscope.png"
else
    echo "speedscope: SPEEDSCOPE (its dist/release folder) not given: trace-speedscope.png left as it is"
fi
