# Sourced by the shell tests: the check counter (check, $fails) and a
# bounded wait for a line in a file (wait_for).
fails=0
check() { # description, command status
	if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

# Polls until a file has a line matching a pattern (bounded: 10 s).
wait_for() { # file pattern
	i=0
	while [ $i -lt 200 ] && ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1)); sleep 0.05
	done
	grep -q "$2" "$1"
}
