#!/bin/bash
# soak.sh - run the whole VM test suite N times in a row per kernel and stop
# at the first failure, keeping its log.
#
# Usage: tools/vm/soak.sh [-n N] [SERIES...]
#   -n  runs per kernel (default 20)
#   SERIES  kernel series (default: 6.1 6.12), as for tools/run-tests.sh
#
# Each run is `tools/run-tests.sh --vm-only SERIES` (every kselftest and the
# unit tests of tests/vm.list in one fresh VM). Logs go to build/soak/:
# SERIES-RUN.log (the runner's output) and SERIES-RUN.console.log (the
# serial console). Passing runs' logs are removed; a failure leaves its logs,
# prints the failed lines and exits 1. The last line is a summary with the
# number of runs and the seconds per run.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
[ "${1:-}" = --help ] && { usage; exit 0; }
n=20
while getopts "n:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $n in ''|*[!0-9]*|0) echo "soak.sh: -n wants a positive number" >&2; exit 2 ;; esac
series=("$@")
[ ${#series[@]} -gt 0 ] || series=(6.1 6.12)

out=$root/build/soak
mkdir -p "$out"
summary=()
for s in "${series[@]}"; do
	total=0
	for i in $(seq 1 "$n"); do
		log=$out/$s-$i.log
		t0=$(date +%s)
		: > "$out/.start"
		tools/run-tests.sh --vm-only "$s" > "$log" 2>&1
		rc=$?
		t=$(($(date +%s) - t0))
		total=$((total + t))
		# This run's consoles: the kernel's VM and the soft-RoCE one.
		find build/results -maxdepth 1 -name 'vm-*.log' \
			-newer "$out/.start" -exec cat {} + \
			> "$out/$s-$i.console.log" 2>/dev/null
		echo "soak: $s run $i/$n: $(tail -n 1 "$log") (${t}s)"
		if [ "$rc" != 0 ]; then
			echo "soak: FAILED on $s run $i: $log, $out/$s-$i.console.log"
			grep -E '^not ok|^# +FAIL|check-log|^#.*Expected' "$log" | head -n 40
			exit 1
		fi
		rm -f "$log" "$out/$s-$i.console.log"
	done
	rm -f "$out/.start"
	summary+=("$s: $n runs, $((total / n)) s per run")
done
(IFS=";"; echo "soak: all passed (${summary[*]})")
