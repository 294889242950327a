#!/bin/bash
# check-tsan.sh - run the receive-path unit tests built with
# -fsanitize=thread (build/tests/tsan/, `make tsan`): fails when a test
# fails or ThreadSanitizer reports anything (a data race, a lock-order
# inversion, ...).
#
# Usage: tests/unit/check-tsan.sh [-h|--help]
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
'') ;;
*) sed -n '2,7s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/build/tests/tsan
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0
n=0
for t in "$dir"/test_*; do
	[ -x "$t" ] || continue
	n=$((n + 1))
	TSAN_OPTIONS="halt_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}" \
		timeout 600 "$t" > "$log" 2>&1
	rc=$?
	reports=$(grep -c '^WARNING: ThreadSanitizer' "$log")
	echo "$(basename "$t"): $(grep '^# Totals' "$log" | tail -n 1), $reports ThreadSanitizer reports, exit $rc"
	if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
		grep -A 30 '^WARNING: ThreadSanitizer' "$log" | head -n 120
		grep '^not ok' "$log"
		fail=1
	fi
done
[ "$n" -gt 0 ] || { echo "no ThreadSanitizer build in $dir: run make tsan"; exit 1; }
exit $fail
