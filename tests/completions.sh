#!/bin/sh
# The shell completions generated from the option table: each lists every
# long option `infertop --help` prints; bash's parses and completes
# options and values; zsh's and fish's parse and load when those shells
# are installed (skipped, and said, when not).
: "${INFERTOP_BIN:?}"
set -u
dir="$(dirname "$INFERTOP_BIN")/completions"
. "$(dirname "$0")/check_lib.sh"
opts=$("$INFERTOP_BIN" --help | grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z0-9-]+' | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u)
[ -n "$opts" ]
check "options found in --help" $?
for f in infertop _infertop infertop.fish; do
	[ -s "$dir/$f" ] || { check "$f generated" 1; continue; }
	missing=""
	for o in $opts; do
		case $f in
		infertop.fish) grep -q -- "-l ${o#--}\( \|$\)" "$dir/$f" || missing="$missing $o" ;;
		*) grep -q -- "$o\([^a-z0-9-]\|$\)" "$dir/$f" || missing="$missing $o" ;;
		esac
	done
	[ -z "$missing" ] || echo "missing from $f:$missing"
	[ -z "$missing" ]
	check "$f lists every long option" $?
done

bash -n "$dir/infertop"
check "bash: the script parses" $?
# Completion as bash would ask for it.
out=$(bash -c '
. "$1"
complete -p infertop >/dev/null || exit 1
COMP_WORDS=(infertop --ap); COMP_CWORD=1; _infertop; echo "A:${COMPREPLY[*]}"
COMP_WORDS=(infertop --api ""); COMP_CWORD=2; _infertop; echo "B:${COMPREPLY[*]}"
COMP_WORDS=(infertop co); COMP_CWORD=1; _infertop; echo "C:${COMPREPLY[*]}"
COMP_WORDS=(infertop compare --fa); COMP_CWORD=2; _infertop; echo "D:${COMPREPLY[*]}"
' sh "$dir/infertop" 2>&1)
st=$?
echo "$out" | grep -q '^A:.*--api-key-env' && echo "$out" | grep -q '^A:--api ' &&
	echo "$out" | grep -qx 'B:chat completions' && echo "$out" | grep -qx 'C:compare' &&
	echo "$out" | grep -qx 'D:--fail-if'
[ $? -eq 0 ] && [ $st -eq 0 ] || { echo "$out"; false; }
check "bash: loads, completes options, --api's values, subcommands and their options" $?

# Issue 28 item 12: fleet and sim are completed, and enumerated values
# (--format, --profile, --timing, --theme) complete as values, never as
# the files of the current directory (here: x.json).
work=$(mktemp -d)
touch "$work/x.json"
out=$(cd "$work" && INFERTOP_THEMES_DIR="$INFERTOP_SRCDIR/themes" bash -c '
. "$1"
COMP_WORDS=(infertop fl); COMP_CWORD=1; _infertop; echo "E:${COMPREPLY[*]}"
COMP_WORDS=(infertop fleet --targ); COMP_CWORD=2; _infertop; echo "F:${COMPREPLY[*]}"
COMP_WORDS=(infertop sim --prof); COMP_CWORD=2; _infertop; echo "G:${COMPREPLY[*]}"
COMP_WORDS=(infertop sim --profile ""); COMP_CWORD=3; _infertop; echo "H:${COMPREPLY[*]}"
COMP_WORDS=(infertop sim --timing ""); COMP_CWORD=3; _infertop; echo "I:${COMPREPLY[*]}"
COMP_WORDS=(infertop report x.json --format ""); COMP_CWORD=4; _infertop; echo "J:${COMPREPLY[*]}"
COMP_WORDS=(infertop compare --format ""); COMP_CWORD=3; _infertop; echo "K:${COMPREPLY[*]}"
COMP_WORDS=(infertop --theme ""); COMP_CWORD=2; _infertop; echo "L:${COMPREPLY[*]}"
COMP_WORDS=(infertop --theme d); COMP_CWORD=2; _infertop; echo "M:${COMPREPLY[*]}"
COMP_WORDS=(infertop sim --max-running ""); COMP_CWORD=3; _infertop; echo "N:${COMPREPLY[*]}"
COMP_WORDS=(infertop report ""); COMP_CWORD=2; _infertop; echo "O:${COMPREPLY[*]}"
' sh "$dir/infertop" 2>&1)
st=$?
ok=0
expect() { # LINE-REGEX what
	echo "$out" | grep -Eqx -- "$1" || { echo "bash: no line /$1/ ($2)"; ok=1; }
}
expect 'E:fleet' "the fleet subcommand"
expect 'F:--targets --targets-file' "fleet's options"
expect 'G:--profile' "sim's options"
expect 'H:vllm sglang .*' "sim --profile's values"
expect 'I:fixed batching' "sim --timing's values"
expect 'J:text json csv markdown html' "report --format's values, not files"
expect 'K:text json csv markdown html' "compare --format's values"
expect 'L:default( [a-z-]+)*' "--theme's names"
echo "$out" | grep -q '^L:.*dracula' || { echo "bash: --theme lacks dracula"; ok=1; }
echo "$out" | grep -q '^L:.*x\.json' && { echo "bash: --theme offers files"; ok=1; }
expect 'M:default dracula' "--theme by prefix"
expect 'N:' "a number: nothing"
expect 'O:x.json' "report's file"
[ $ok -eq 0 ] && [ $st -eq 0 ] || echo "$out"
[ $ok -eq 0 ] && [ $st -eq 0 ]
check "bash: fleet, sim's options, enumerated values and themes, never files for them" $?

if command -v zsh >/dev/null 2>&1; then
	zsh -n "$dir/_infertop"
	check "zsh: the script parses" $?
	# Its dump file in a directory of its own: compinit replaces the file it
	# is given (run as root with /dev/null, that was /dev/null itself).
	zdump=$(mktemp -d)
	zsh -fc 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D -d "$2/zcompdump"; (( $+_comps[infertop] ))' \
		sh "$dir" "$zdump" 2>&1
	check "zsh: compinit loads it for infertop, without errors" $?
	rm -rf "$zdump"
else
	echo "skip: zsh not installed"
fi
if command -v fish >/dev/null 2>&1; then
	fish -n "$dir/infertop.fish"
	check "fish: the script parses" $?
	out=$(fish -c "source '$dir/infertop.fish'; complete -C'infertop --ap'; complete -C'infertop --api '" 2>&1)
	echo "$out" | grep -q '^--api' && echo "$out" | grep -q '^chat' && echo "$out" | grep -q '^completions'
	check "fish: loads, completes options and --api's values" $?
	out=$(cd "$work" && INFERTOP_THEMES_DIR="$INFERTOP_SRCDIR/themes" fish -c "source '$dir/infertop.fish'
complete -C'infertop fl'; complete -C'infertop sim --profile '; complete -C'infertop report x.json --format '
complete -C'infertop --theme '" 2>&1)
	echo "$out" | grep -q '^fleet' && echo "$out" | grep -q '^sglang' && echo "$out" | grep -q '^markdown' &&
		echo "$out" | grep -q '^dracula' && ! echo "$out" | grep -q 'x\.json'
	[ $? -eq 0 ] || { echo "$out"; false; }
	check "fish: fleet, sim --profile, report --format and --theme values, no files" $?
else
	echo "skip: fish not installed"
fi
rm -rf "$work"
[ -c /dev/null ]
check "/dev/null is still a device" $?
[ "$fails" -eq 0 ]
