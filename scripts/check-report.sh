#!/usr/bin/env bash
# Checks an HTML report as a reader sees it, in headless Chromium at 1400 and at 800 px wide:
# the DOM holds the drawing, the tables and the legend; the drawing's zoom works (its "fit" button
# makes the whole drawing fit its box, "+" makes it larger, "100%" brings back the size it loaded
# at); no text is smaller than 9 px (HTML text by
# its computed size, the drawing's labels by their rendered height, what sits in closed
# <details> left out); each NAME given with --visible can be read without opening anything; the
# page does not scroll sideways (wide tables scroll inside their own box); the "at a glance"
# section (the heaviest task and where its critical path went) ends within the first 1,000 px;
# and a screenshot at each width is not blank (kept in /tmp, out of the repository).
#
# Usage: scripts/check-report.sh REPORT.html [--visible NAME]...
set -euo pipefail
REPORT=$(realpath "$1"); shift
VISIBLE=()
while [ $# -gt 0 ]; do
    case $1 in
        --visible) VISIBLE+=("$2"); shift 2 ;;
        *) echo "check-report: unknown argument $1" >&2; exit 2 ;;
    esac
done
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
    echo "check-report: no Chromium found; install it with: apt-get install chromium" >&2
    exit 1
fi
FLAGS=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars)
W=$(mktemp -d /tmp/check-report.XXXXXX); trap 'rm -rf "$W"' EXIT
# A copy of the report with a probe that writes what it measured into the DOM Chromium dumps.
PROBE=$W/probe.html
cp "$REPORT" "$PROBE"
names=$(printf '%s\n' "${VISIBLE[@]+"${VISIBLE[@]}"}" | python3 -c 'import json,sys; print(json.dumps([l.rstrip("\n") for l in sys.stdin if l.strip()]))')
cat >> "$PROBE" <<EOF
<script>
(function () {
  var html = 1e9, svg = 1e9;
  document.querySelectorAll('body *').forEach(function (e) {
    var text = Array.prototype.some.call(e.childNodes, function (n) {
      return n.nodeType === 3 && n.textContent.trim() !== '';
    });
    if (!text || e.closest('details:not([open])') || e.closest('script, style')) return;
    if (e instanceof SVGElement) {
      var h = e.getBoundingClientRect().height;
      if (h > 0 && h < svg) svg = h;
    } else {
      var f = parseFloat(getComputedStyle(e).fontSize);
      if (f < html) html = f;
    }
  });
  var seen = document.body.innerText;
  var hidden = $names.filter(function (n) { return seen.indexOf(n) < 0; });
  // The zoom, after the sizes above were measured at the size the drawing loads at.
  var zoom = null, box = document.getElementById('model'), pic = box && box.querySelector('svg');
  var button = function (k) { document.querySelector('#zoom button[data-z=' + k + ']').click(); };
  if (pic && document.getElementById('zoom')) {
    var w = function () { return pic.getBoundingClientRect().width; };
    var h = function () { return pic.getBoundingClientRect().height; };
    var start = w();
    button('fit');
    var fit = {w: w(), h: h()};
    button('in');
    var bigger = w();
    button('one');
    zoom = {start: start, fit: fit, bigger: bigger, back: w(),
            box: {w: box.clientWidth, h: box.clientHeight}};
  }
  var page = {wide: document.documentElement.scrollWidth, window: window.innerWidth};
  var glance = document.getElementById('finding');
  var glanceEnd = glance ? glance.getBoundingClientRect().bottom + window.scrollY : null;
  document.body.setAttribute('data-probe', JSON.stringify({html: html, svg: svg, hidden: hidden,
    zoom: zoom, page: page, glance: glanceEnd}));
})();
</script>
EOF
for width in 1400 800; do
    DOM=$(timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=$width,2000 --dump-dom "file://$PROBE" 2>/dev/null)
    for want in "<svg" "At a glance" "Top-level tasks by summed latency" "How to read these tables" "Drill-down" "<table"; do
        if ! grep -q "$want" <<<"$DOM"; then
            echo "check-report: the page rendered at $width px has no \"$want\"" >&2
            exit 1
        fi
    done
    probe=$(grep -o "data-probe=\"[^\"]*\"" <<<"$DOM" | head -1 | sed 's/^data-probe="//; s/"$//; s/&quot;/"/g')
    [ -n "$probe" ] || { echo "check-report: the probe did not run at $width px" >&2; exit 1; }
    python3 - "$width" "$probe" <<'PY'
import json, sys
width, p = sys.argv[1], json.loads(sys.argv[2])
bad = []
if p["html"] < 9:
    bad.append(f"HTML text of {p['html']} px")
if p["svg"] < 9:
    bad.append(f"drawing labels {p['svg']:.1f} px high")
if p["hidden"]:
    bad.append("not visible without opening anything: " + ", ".join(p["hidden"]))
z = p.get("zoom")
if z is None:
    bad.append("no drawing with zoom buttons")
else:
    if z["fit"]["w"] > z["box"]["w"] + 1 or z["fit"]["h"] > z["box"]["h"] + 1:
        bad.append(f"'fit' left the drawing {z['fit']['w']:.0f}x{z['fit']['h']:.0f} px in a box of {z['box']['w']}x{z['box']['h']}")
    if not z["bigger"] > z["fit"]["w"] * 1.2:
        bad.append(f"'+' did not enlarge the drawing ({z['fit']['w']:.0f} -> {z['bigger']:.0f} px)")
    if abs(z["back"] - z["start"]) > 1:
        bad.append(f"'100%' gave {z['back']:.0f} px, the drawing loaded at {z['start']:.0f}")
if p["page"]["wide"] > p["page"]["window"] + 1:
    bad.append(f"the page scrolls sideways: {p['page']['wide']} px wide in a window of {p['page']['window']}")
if p["glance"] is None:
    bad.append("no 'at a glance' section")
elif p["glance"] > 1000:
    bad.append(f"the 'at a glance' section ends {p['glance']:.0f} px down, past the first 1,000")
if bad:
    sys.exit(f"check-report: at {width} px: " + "; ".join(bad))
svg = "none" if p["svg"] >= 1e9 else f"{p['svg']:.1f} px"
print(f"check-report: at {width} px the smallest text is {p['html']:.0f} px, the smallest label {svg}; "
      f"zoom: {z['start']:.0f} px wide, fit {z['fit']['w']:.0f}, + {z['bigger']:.0f}, 100% {z['back']:.0f}; "
      f"page {p['page']['wide']} px wide; 'at a glance' ends at {p['glance']:.0f} px")
PY
    SHOT=/tmp/scalpel-report-$width.png
    rm -f "$SHOT"
    timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=$width,2000 --screenshot="$SHOT" \
        "file://$REPORT" >/dev/null 2>&1
    # A blank page compresses to almost nothing; a rendered report does not.
    SIZE=$(stat -c %s "$SHOT" 2>/dev/null || echo 0)
    if [ "$SIZE" -lt 20000 ]; then
        echo "check-report: the screenshot $SHOT is missing or blank ($SIZE bytes)" >&2
        exit 1
    fi
    echo "check-report: screenshot $SHOT ($SIZE bytes)"
done
echo "check-report: $REPORT renders in $("$CHROME" --version 2>/dev/null | head -1)"
