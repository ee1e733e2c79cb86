# Sourced by the shell tests that drive infertop processes (control.sh,
# serve.sh, slice.sh, k8s.sh): the check counter and a bounded wait.
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
