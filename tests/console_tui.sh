#!/bin/sh
# Finding every key from the screen, and the final screen's figures, in a
# tmux pane at 80x24, 120x40 and 200x60 against infertop --demo:
# * the ? overlay scrolls (PgDn, End) down to q, and no key's help text is
#   cut mid-word: each one, as the man page has it, is read back whole
#   from the overlay's rows (pieced together from its "rows A-B of N");
# * the key bar shows R, F, t and ? at every width;
# * an unknown key says so in the status line;
# * h opens the help, F10 quits;
# * the header keeps the URL and the model (cut in the middle when long);
# * after a -n run, the load line's whole-run req/s is the summary's;
# * over https the header says "tls -k" (the direct path's TLS).
# Every wait polls the pane with a deadline; nothing sleeps blindly.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

screen_all() { T capture-pane -p -S - -t tui; }
start() { # COLS ROWS ARGS...
	cols=$1
	lines=$2
	shift 2
	T kill-session -t tui 2>/dev/null
	rm -f "$tmp/status"
	tmux_session "$cols" "$lines" "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo $*; echo \$? >$tmp/status"
}
wait_status() { # SECONDS
	i=0
	while [ $i -lt $(($1 * 10)) ] && [ ! -s "$tmp/status" ]; do i=$((i + 1)); sleep 0.1; done
	[ -s "$tmp/status" ]
}

# The help texts as the man page's KEYS section has them (one a line).
sed -n '/^\.SH KEYS/,/^\.SH /p' "$INFERTOP_SRCDIR/man/infertop.1.in" |
	awk '/^\.TP/ { getline; getline; print }' |
	sed -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' >"$tmp/helps"
[ "$(wc -l <"$tmp/helps")" -gt 20 ]
check "the man page's key texts read" $? || exit 1

# The overlay's rows from a capture, filed by their index ("rows A-B of N"
# in its last row; none: it all fits) into $tmp/help.rows.
cat >"$tmp/rows.py" <<'EOF'
import re, sys
cap, store, cols = sys.argv[1], sys.argv[2], int(sys.argv[3])
w = min(cols - 4, 100)
x = (cols - w) // 2
lines = open(cap, encoding="utf-8").read().split("\n")
top = next(i for i, l in enumerate(lines) if "infertop keys" in l)
body = []
for l in lines[top + 1:]:
    if l[x:x + 1] in ("╰", "+") and l[x + 1:x + 2] in ("─", "-"):
        break
    body.append(l[x + 2:x + w - 2].rstrip())
rows = {}
try:
    rows = {int(k): v for k, v in (l.split("\t", 1) for l in open(store, encoding="utf-8").read().splitlines())}
except FileNotFoundError:
    pass
m = re.search(r"rows (\d+)-(\d+) of (\d+)", body[-1]) if body else None
if m:
    a, b, n = map(int, m.groups())
    body = body[:-1]
    print("more" if b < n else "end")
else:
    a = 1
    print("end")
for i, l in enumerate(body):
    rows[a + i] = l
with open(store, "w", encoding="utf-8") as f:
    for k in sorted(rows):
        f.write("%d\t%s\n" % (k, rows[k]))
EOF
# Whole help texts found in the overlay's rows joined up.
cat >"$tmp/whole.py" <<'EOF'
import sys
rows = [l.split("\t", 1)[1] for l in open(sys.argv[1], encoding="utf-8").read().splitlines()]
text = " ".join(" ".join(rows).split())
bad = [h for h in open(sys.argv[2], encoding="utf-8").read().splitlines() if " ".join(h.split()) not in text]
for h in bad:
    print("not whole on screen:", h)
sys.exit(1 if bad else 0)
EOF

help_check() { # reads the overlay page by page (PgDn) to its end
	rm -f "$tmp/help.rows"
	T send-keys -t tui '?'
	wait_for "${cols}x$lines: ? opens the help" "infertop keys" || return 1
	page=0
	while [ $page -lt 20 ]; do
		screen >"$tmp/cap"
		state=$(python3 "$tmp/rows.py" "$tmp/cap" "$tmp/help.rows" "$cols")
		[ "$state" = end ] && break
		last=$(grep -Eo 'rows [0-9]+-[0-9]+ of' "$tmp/cap")
		T send-keys -t tui NPage
		i=0
		while [ $i -lt 50 ] && screen | grep -qF "$last"; do i=$((i + 1)); sleep 0.1; done
		page=$((page + 1))
	done
	[ "$state" = end ]
	check "${cols}x$lines: the help scrolls to its end" $?
	grep -Eq 'q Q F10 +stop' "$tmp/help.rows"
	check "${cols}x$lines: the help shows q" $?
	python3 "$tmp/whole.py" "$tmp/help.rows" "$tmp/helps"
	check "${cols}x$lines: every key's help is whole (wrapped at words, never cut)" $?
	if [ $page -gt 0 ]; then # it scrolled
		screen | grep -q "the end: Up/k"
		check "${cols}x$lines: the last row says it is the end" $?
		T send-keys -t tui Home
		wait_for "${cols}x$lines: Home goes back to the top" "rows 1-[0-9]+ of" 5
	fi
	T send-keys -t tui Escape
	wait_gone_help
}
wait_gone_help() {
	i=0
	while [ $i -lt 50 ] && screen | grep -q "infertop keys"; do i=$((i + 1)); sleep 0.1; done
	! screen | grep -q "infertop keys"
	check "${cols}x$lines: Esc closes the help" $?
}

for size in 80x24 120x40 200x60; do
	start "${size%x*}" "${size#*x}" -c 2 -d 600s \
		--sim-arg --model --sim-arg meta-llama/Llama-3.1-70B-Instruct-FP8-dynamic
	wait_for "${size}: dashboard shows up" "Latency" 20 || continue
	# The header: the URL's and the model's both ends.
	wait_for "${size}: the header keeps the URL's ends" "^ infertop http://12[^ ]*:[0-9]+  model " 5
	wait_for "${size}: the header keeps the model's ends" "  model meta-llama.*(…|~).*dynamic|  model meta-llama/Llama-3\.1-70B-Instruct-FP8-dynamic" 5
	# The key bar: the keys found nowhere else.
	for k in R F t '\?' q; do
		screen | tail -1 | grep -Eq "(^| )$k( |$)"
		check "${size}: the key bar shows $k" $?
	done
	T send-keys -t tui x
	wait_for "${size}: an unknown key gives a hint" "unknown key x: \? for help" 5
	help_check
	T send-keys -t tui h
	wait_for "${size}: h opens the help too" "infertop keys" 5
	T send-keys -t tui h
	wait_gone_help
	T send-keys -t tui F10
	wait_status 20
	check "${size}: F10 quits" $?
done

# The final screen after a -n run: the whole run's req/s is the summary's
# (the same two decimals), beside the window's.
for size in 80x24 120x40 200x60; do
	start "${size%x*}" "${size#*x}" -n 40 -c 4
	wait_for "${size}: -n run ends on the final screen" "q quits" 60 || continue
	screen | head -1 | grep -Eq "^ infertop http://127\.0\.0\.1:[0-9]+  model infertop-sim "
	check "${size}: the header has the URL and model whole" $?
	shown=$(screen | sed -En '2s/.*run ([0-9.]+) req\/s.*/\1/p')
	[ -n "$shown" ]
	check "${size}: the final screen shows the run's req/s ($shown)" $?
	T send-keys -t tui q
	wait_status 20
	summary=$(screen_all | sed -En 's/^Request throughput \(req\/s\): +([0-9.]+).*/\1/p')
	[ -n "$shown" ] && [ "$shown" = "$summary" ]
	check "${size}: the same as the summary's ($summary)" $?
done

# https: the header says whose TLS it is (the direct path's, -k).
if command -v openssl >/dev/null 2>&1; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-keyout "$tmp/k.pem" -out "$tmp/c.pem" >/dev/null 2>&1
	for size in 80x24 120x40; do
		start "${size%x*}" "${size#*x}" -c 2 -d 600s -k --sim-arg --tls-cert --sim-arg "$tmp/c.pem" \
			--sim-arg --tls-key --sim-arg "$tmp/k.pem"
		wait_for "${size}: https dashboard shows up" "Latency" 20 || continue
		wait_for "${size}: the header says tls -k beside the https URL" \
			"^ infertop https://12[^ ]*:[0-9]+  tls -k  model " 5
		T send-keys -t tui q
		wait_status 20
	done
fi

cat "$tmp"/asan* "$tmp"/ubsan* 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
