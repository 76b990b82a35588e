#!/usr/bin/env bash
# Checks that an HTML report renders in headless Chromium: the DOM Chromium builds holds the
# drawing and the tables, and a screenshot is taken (kept out of the repository, in /tmp).
#
# Usage: scripts/check-report.sh REPORT.html [SCREENSHOT.png]   (default: /tmp/scalpel-report.png)
set -euo pipefail
REPORT=$(realpath "$1")
SHOT=${2:-/tmp/scalpel-report.png}
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
    echo "check-report: no Chromium found; install it with: apt-get install chromium" >&2
    exit 1
fi
FLAGS=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars)
DOM=$(timeout 120 "$CHROME" "${FLAGS[@]}" --dump-dom "file://$REPORT" 2>/dev/null)
for want in "<svg" "Top-level tasks by total time" "Drill-down" "<table"; do
    if ! grep -q "$want" <<<"$DOM"; then
        echo "check-report: the rendered page has no \"$want\"" >&2
        exit 1
    fi
done
rm -f "$SHOT"
timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=1400,2000 --screenshot="$SHOT" \
    "file://$REPORT" >/dev/null 2>&1
# A blank page compresses to almost nothing; a rendered report does not.
SIZE=$(stat -c %s "$SHOT" 2>/dev/null || echo 0)
if [ "$SIZE" -lt 20000 ]; then
    echo "check-report: the screenshot $SHOT is missing or blank ($SIZE bytes)" >&2
    exit 1
fi
echo "check-report: $1 renders in $("$CHROME" --version 2>/dev/null | head -1); screenshot $SHOT ($SIZE bytes)"
