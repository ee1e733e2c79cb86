#!/bin/sh
# The TTFT chart shows --slo ttft: a dotted line at the limit (labelled
# "SLO 30 ms"), the points over it and the title's figure in the crit
# colour, the very colour of the latency table's cells over it; a limit
# the run stays well under leaves the series its own colour. A simulator
# answers in a fixed 50 ms (a new one each run, --demo: a second run
# would find its prompts in the first one's prefix cache); at 80x24, 120x40 and 200x60, with
# --slo ttft=30ms (every request over) and ttft=150ms (none near). The
# colours are read from the pane's escape codes (tmux capture-pane -e).
# Every wait polls the pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

# colours.py FILE MODE: reads a capture with escapes; prints one line per
# finding and exits 1 when the TTFT chart breaks MODE's rule:
#   over:  its braille cells and its title's figure in the fg colour of
#          the latency table's TTFT p50 cell (crit), a line of U+2508;
#   under: no braille cell in that colour, a line of U+2508 labelled
#          "SLO 150 ms".
cat >"$tmp/colours.py" <<'EOF'
import re, sys
rows = []
for raw in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    fg, cells = None, []
    for tok in re.split(r"(\x1b\[[0-9;:]*m)", raw):
        if tok.startswith("\x1b["):
            ps = tok[2:-1].replace(":", ";").split(";") if tok[2:-1] else ["0"]
            i = 0
            while i < len(ps):
                p = int(ps[i] or 0)
                if p == 0 or p == 39:
                    fg = None
                elif 30 <= p <= 37 or 90 <= p <= 97:
                    fg = str(p)
                elif p in (38, 48):
                    n = 3 if ps[i + 1] == "5" else 5
                    if p == 38:
                        fg = ";".join(ps[i:i + n])
                    i += n - 1
                i += 1
        else:
            cells += [(ch, fg) for ch in tok]
    rows.append(cells)
text = ["".join(c for c, _ in r) for r in rows]
mode = sys.argv[2]
# The latency table's TTFT row: its first figure's colour.
crit = None
for t, r in zip(text, rows):
    m = re.match(r"│ TTFT +([0-9.]+)", t)
    if m:
        crit = r[m.start(1)][1]
        break
# The TTFT chart: its box from the title's row to its bottom border.
box = None
for y, t in enumerate(text):
    x = t.find("TTFT p99 client")
    if x >= 0:
        left = t.rfind("╭", 0, x)
        right = t.find("╮", x)
        box = (y, left, right)
        break
if crit is None or box is None:
    print("no latency table TTFT row or no TTFT chart", crit, box)
    sys.exit(1)
y0, left, right = box
title = text[y0][left:right]
m = re.search(r"TTFT p99 client ([0-9.]+)", title)
title_fg = rows[y0][left + m.start(1)][1] if m else None
braille, line, label = [], 0, False
for y in range(y0 + 1, len(rows)):
    if text[y][left] == "╰":
        break
    inner = rows[y][left + 1:right]
    braille += [fg for ch, fg in inner if 0x2801 <= ord(ch) <= 0x28ff]
    line += sum(1 for ch, _ in inner if ch == "\u2508")
    label = label or "SLO 150 ms" in text[y][left:right]
print("crit", crit, "title", title_fg, "braille", set(braille), "line", line, "label", label)
ok = line > 0 and braille
if mode == "over":
    ok = ok and title_fg == crit and all(fg == crit for fg in braille)
else:
    ok = ok and label and crit not in braille
sys.exit(0 if ok else 1)
EOF

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	for mode in over under; do
		limit=30ms
		[ $mode = under ] && limit=150ms
		T kill-session -t tui 2>/dev/null
		tmux_session "$cols" "$rows" "$tmp" \
			"env TERM=xterm-256color XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 50ms -c 2 -d 60s --slo ttft=$limit"
		wait_for "$size $mode: the TTFT chart has a figure" '─ TTFT p99 client [0-9.]+ ms' 20 || continue
		# Two seconds of points: the chart is more than its first column.
		wait_for "$size $mode: the run is 3 s old" 'running +00:00:0[3-9]' 20
		T capture-pane -e -p -t tui >"$tmp/cap"
		python3 "$tmp/colours.py" "$tmp/cap" $mode
		check "$size --slo ttft=$limit: the chart's line and colours" $? || screen
	done
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
