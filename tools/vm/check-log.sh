#!/bin/bash
# check-log.sh - judge a VM run from its serial console log.
# Usage: check-log.sh LOG KVER QEMU_RC NTESTS [RESULTS]
#
# Counts results per test: a kselftest "# Totals:" line (or the unit runner's
# line of the same form) gives pass/fail/skip; a test without one counts as a
# single result from its exit code (0 pass, 4 skip, else fail). Any kernel
# log line matching the bad patterns, a test without an end line, a missing
# "done" line or a QEMU timeout is a failure. Prints one summary line and, with
# RESULTS, appends "pass fail skip" to it. Exit 0 only when nothing failed.
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
log=$1 kver=$2 qrc=$3 ntests=$4 results=${5:-}

awk -v ntests="$ntests" -v qrc="$qrc" -v kver="$kver" '
function flush(   p, f, s) {
	if (cur == 0)
		return
	if (have_totals) {
		p = tp; f = tf; s = ts
		if (rc != 0 && rc != 4 && f == 0) {
			f = 1
			print "check-log: test " cur " exited " rc " after reporting no failure"
		}
	} else if (rc == 0) { p = 1; f = 0; s = 0 }
	else if (rc == 4) { p = 0; f = 0; s = 1 }
	else { p = 0; f = 1; s = 0 }
	if (bad) {
		f++
		print "check-log: test " cur " left a bad kernel log line"
	}
	pass += p; fail += f; skip += s
	cur = 0
}
{ sub(/\r$/, "") }
/^zcrecv-vm: begin [0-9]+ / { flush(); cur = $3; have_totals = 0; tp = tf = ts = 0; bad = 0; rc = -1; begun[cur] = 1; next }
/^zcrecv-vm: end [0-9]+ rc=/ { split($4, a, "="); rc = a[2] + 0; ended[$3] = 1; flush(); next }
/^zcrecv-vm: done / { done = 1 }
/# Totals: pass:[0-9]+ fail:[0-9]+/ && cur {
	have_totals = 1
	for (i = 1; i <= NF; i++) {
		split($i, kv, ":")
		if (kv[1] == "pass") tp += kv[2]
		else if (kv[1] == "fail" || kv[1] == "error") tf += kv[2]
		else if (kv[1] == "skip") ts += kv[2]
	}
}
/BUG:|WARNING:|Oops|KFENCE|general protection|soft lockup|hung task|Kernel panic|Call Trace:/ {
	nbad++
	if (cur) bad = 1
	print "check-log: bad kernel line: " $0
}
END {
	flush()
	for (i = 1; i <= ntests; i++)
		if (!ended[i]) {
			fail++
			print "check-log: test " i " has no result (crash or timeout)"
		}
	if (!done) { print "check-log: the guest did not finish its tests"; if (!nbad) fail++ }
	if (qrc == 124 || qrc == 137) print "check-log: QEMU timed out"
	if (nbad && !fail) fail++
	printf "vm %s: %d passed, %d failed, %d skipped\n", kver, pass, fail, skip
	printf "%d %d %d\n", pass, fail, skip > "/dev/stderr"
	exit fail ? 1 : 0
}' "$log" 2> >(if [ -n "$results" ]; then cat >> "$results"; else cat >/dev/null; fi)
