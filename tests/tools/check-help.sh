#!/bin/bash
# check-help.sh - every built tool (tools/*.c) and every script of the tree
# answers --help with its usage on stdout and exit status 0, and an unknown
# option with the usage on stderr, nothing on stdout and exit status 2.
#
# Usage: tests/tools/check-help.sh   (no arguments, after make; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
bad() { echo "help check: $*"; fail=1; }

check() {	# check NAME CMD...
	local name=$1 rc
	shift
	timeout 20 "$@" --help > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ "$rc" -eq 0 ] || bad "$name --help: exit $rc, not 0"
	grep -qi usage "$tmp/out" || bad "$name --help: no usage on stdout"
	[ ! -s "$tmp/err" ] || bad "$name --help: wrote on stderr: $(head -n 1 "$tmp/err")"
	timeout 20 "$@" --no-such-option > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || bad "$name --no-such-option: exit $rc, not 2"
	grep -qi usage "$tmp/err" || bad "$name --no-such-option: no usage on stderr"
	[ ! -s "$tmp/out" ] || bad "$name --no-such-option: wrote on stdout"
	n=$((n + 1))
}

for c in tools/*.c; do
	t=build/tools/$(basename "$c" .c)
	if [ -x "$t" ]; then
		check "$t" "$t"
	else
		bad "$t is not built (run make)"
	fi
done
for s in $(git ls-files '*.sh' 2>/dev/null || ls tools/*.sh tools/*/*.sh tests/*/*.sh); do
	check "$s" "$s"
done
# Commands without the .sh suffix.
for s in tools/cluster/zccluster tools/cluster/zcc-agent; do
	check "$s" "$s"
done
[ "$fail" -eq 0 ] && echo "help check: $n programs answer --help and refuse a bad option"
exit $fail
