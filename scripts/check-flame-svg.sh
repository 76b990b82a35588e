#!/usr/bin/env bash
# Checks that a flame graph SVG (`scalpel flame`) opens in headless Chromium: its script runs
# (inferno's init() makes the drawing fill the window and lays the labels out),
# the frames named with --frame are in the rendered DOM, and a screenshot is not blank (kept in
# /tmp, out of the repository).
#
# Usage: scripts/check-flame-svg.sh FLAME.svg [--frame NAME]...
set -euo pipefail
SVG=$(realpath "$1"); shift
FRAMES=()
while [ $# -gt 0 ]; do
    case $1 in
        --frame) FRAMES+=("$2"); shift 2 ;;
        *) echo "check-flame-svg: unknown argument $1" >&2; exit 2 ;;
    esac
done
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
    echo "check-flame-svg: no Chromium found; install it with: apt-get install chromium" >&2
    exit 1
fi
FLAGS=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars)
DOM=$(timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=1200,1000 --virtual-time-budget=2000 \
    --dump-dom "file://$SVG" 2>/dev/null)
grep -q "<svg" <<<"$DOM" || { echo "check-flame-svg: $SVG did not render" >&2; exit 1; }
# inferno's init() (the SVG's onload) makes the drawing fluid: it removes the root's width and
# viewBox and sizes the frames to the window. Both still there means the script did not run.
root=$(grep -o '<svg [^>]*>' <<<"$DOM" | head -1)
if grep -q 'viewBox=' <<<"$root" || ! grep -q 'onload="init' <<<"$root"; then
    echo "check-flame-svg: the graph's script did not run: $root" >&2
    exit 1
fi
labels=$(grep -o '<text x="[^"]*" y="[^"]*">[^<][^<]*</text>' <<<"$DOM" | wc -l)
for f in "${FRAMES[@]+"${FRAMES[@]}"}"; do
    grep -qF "$f" <<<"$DOM" || { echo "check-flame-svg: no frame \"$f\" in the rendered graph" >&2; exit 1; }
done
SHOT=/tmp/scalpel-flame.png
rm -f "$SHOT"
timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=1200,800 --screenshot="$SHOT" "file://$SVG" \
    >/dev/null 2>&1
# A blank page compresses to almost nothing; a drawn flame graph does not.
SIZE=$(stat -c %s "$SHOT" 2>/dev/null || echo 0)
if [ "$SIZE" -lt 10000 ]; then
    echo "check-flame-svg: the screenshot $SHOT is missing or blank ($SIZE bytes)" >&2
    exit 1
fi
echo "check-flame-svg: $SVG renders ($labels labels laid out, screenshot $SHOT, $SIZE bytes) in $("$CHROME" --version 2>/dev/null | head -1)"
