#!/bin/bash
# check-sanitizers.sh - run the receive-path unit tests built with
# -fsanitize=thread (build/tests/tsan/, `make tsan`) and with
# -fsanitize=address,undefined (build/tests/asan/, `make asan`): fails
# when a test fails or a sanitizer reports anything (a data race, a
# lock-order inversion, a bad access, a leak, undefined behaviour).
#
# Usage: tests/unit/check-sanitizers.sh [-h|--help] [tsan|asan]...
#        (both kinds when none is named)
set -uo pipefail
usage() { sed -n '2,9s/^# \{0,1\}//p' "$0"; }
kinds=()
for a in "$@"; do
	case $a in
	-h|--help) usage; exit 0 ;;
	tsan|asan) kinds+=("$a") ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ ${#kinds[@]} -gt 0 ] || kinds=(tsan asan)
root=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# What each sanitizer prints first when it reports.
report='^WARNING: ThreadSanitizer|^==[0-9]+==ERROR: (Address|Leak)Sanitizer|runtime error: '
fail=0
for kind in "${kinds[@]}"; do
	dir=$root/build/tests/$kind
	n=0
	for t in "$dir"/test_*; do
		[ -x "$t" ] || continue
		n=$((n + 1))
		TSAN_OPTIONS="halt_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}" \
		UBSAN_OPTIONS="print_stacktrace=1 ${UBSAN_OPTIONS:-}" \
			timeout 600 "$t" > "$log" 2>&1
		rc=$?
		reports=$(grep -cE "$report" "$log")
		echo "$kind/$(basename "$t"): $(grep '^# Totals' "$log" | tail -n 1), $reports sanitizer reports, exit $rc"
		if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
			grep -E -A 30 "$report" "$log" | head -n 120
			# The failed checks (zt prints "# file:line: what") and
			# the tests they failed.
			grep -E '^# [^ ]+:[0-9]+: |^# .*killed by signal|^not ok' "$log"
			fail=1
		fi
	done
	[ "$n" -gt 0 ] || { echo "no $kind build in $dir: run make $kind"; fail=1; }
done
exit $fail
