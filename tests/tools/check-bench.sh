#!/bin/bash
# check-bench.sh - the benchmarks run and verify what they move: a short
# zcbench over TCP and over shm (every mode and arrival; every word of
# each payload checked by both ranks; one and three receive buffers in
# turn), that zcbench's check catches one flipped bit (ZCBENCH_FLIP), and
# a short zcland-bench (every landing
# checked page by page). Their timings are not looked at, only that every
# iteration verified and each tool's table has its rows.
#
# Usage: tests/tools/check-bench.sh   (no arguments, after make; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset ZCBENCH_FLIP
fail=0
bad() { echo "bench check: $*"; fail=1; }

# rows FILE N: the CSV has N data rows and every one says ok.
rows() {
	local got
	got=$(tail -n +2 "$1" | grep -c .)
	[ "$got" -eq "$2" ] || bad "$1: $got rows, not $2"
	got=$(awk 'NR > 1 && $0 !~ /,ok(,|$)/' "$1")
	[ -z "$got" ] || bad "$1: a row that did not verify: $(echo "$got" | head -n 1)"
}

for tp in tcp shm; do
	if ! timeout 120 build/tools/zcbench --transport $tp --min 4096 \
		--max 262144 --iters 3 --csv "$tmp/zcbench-$tp.csv" \
		> "$tmp/zcbench-$tp.out" 2>&1; then
		bad "zcbench --transport $tp failed: $(tail -n 3 "$tmp/zcbench-$tp.out")"
		continue
	fi
	grep -q "^zcbench: transport $tp" "$tmp/zcbench-$tp.out" ||
		bad "zcbench --transport $tp: $(grep '^zcbench: transport' "$tmp/zcbench-$tp.out")"
	grep -q '^zcbench: 0 iteration(s) failed to verify' "$tmp/zcbench-$tp.out" ||
		bad "zcbench --transport $tp: iterations failed to verify"
	# 3 modes x 2 arrivals x 7 sizes
	rows "$tmp/zcbench-$tp.csv" 42
	# The check of auto against the faster mode, per arrival, over the
	# 7 sizes (how many pass is timing: not looked at).
	for a in early posted; do
		grep -Eq "^zcbench: $a arrivals: auto within 5% of the faster of copy and remap at [0-7] of 7 sizes" \
			"$tmp/zcbench-$tp.out" ||
			bad "zcbench --transport $tp: no auto check for $a arrivals"
	done
done

# Every timed message of an early point arrived early, none of a posted
# one (two buffers: posted before the peer can send; the statistics
# exchanged after each trial are not counted): CSV early_ratio.
for tp in tcp shm; do
	[ -f "$tmp/zcbench-$tp.csv" ] || continue	# failed above
	got=$(awk -F, 'NR > 1 && !(($2 == "early" && $16 == "1.000") ||
		($2 == "posted" && $16 == "0.000"))' "$tmp/zcbench-$tp.csv")
	[ -z "$got" ] ||
		bad "zcbench --transport $tp: early_ratio off: $(echo "$got" | head -n 1)"
done

# Other counts of receive buffers used in turn (--buffers): one (posted
# again only once checked; also with rank 1 answering from the buffer
# the ping landed in) and three; every message verifies, and a count out
# of range is refused.
for nb in 1 1e 3; do
	reply=own
	[ "$nb" = 1e ] && nb=1 && reply=echo
	if ! timeout 120 build/tools/zcbench --transport shm --min 65536 \
		--max 262144 --modes remap,auto --arrival early,posted \
		--iters 3 --buffers $nb --reply $reply \
		--csv "$tmp/buffers.csv" > "$tmp/buffers.out" 2>&1; then
		bad "zcbench --buffers $nb --reply $reply failed: $(tail -n 3 "$tmp/buffers.out")"
		continue
	fi
	grep -q "^zcbench: $nb receive buffers\{0,1\} a rank" "$tmp/buffers.out" ||
		bad "zcbench --buffers $nb: no line saying so"
	# 2 modes x 2 arrivals x 3 sizes
	rows "$tmp/buffers.csv" 12
done
for nb in 0 9 x; do
	timeout 20 build/tools/zcbench --transport shm --min 4096 \
		--max 4096 --iters 1 --trials 1 --buffers $nb \
		> "$tmp/buffers.out" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] && grep -q -- '--buffers: 1 to 8' "$tmp/buffers.out" ||
		bad "zcbench --buffers $nb: exit $rc, $(head -n 1 "$tmp/buffers.out")"
done

# One bit flipped in each message rank 0 receives (the last byte of a
# page; a byte inside the 4 KiB message and inside the second page of the
# 8 KiB one): every one of its iterations fails, and none of rank 1's.
for off in 4095 6001; do
	ZCBENCH_FLIP=$off timeout 120 build/tools/zcbench --transport shm \
		--min 4096 --max 8192 --modes copy,remap --arrival early,posted \
		--iters 3 > "$tmp/flip.out" 2>&1
	rc=$?
	# 2 sizes x 2 modes x 2 arrivals x 3 trials x (3 + 2 warm-up)
	n=$(sed -n 's/^zcbench: \([0-9]*\) iteration(s) failed to verify$/\1/p' \
		"$tmp/flip.out")
	[ "$rc" -eq 1 ] && [ "${n:-0}" -eq 120 ] ||
		bad "zcbench with ZCBENCH_FLIP=$off: exit $rc, ${n:-no} failed iterations: $(tail -n 2 "$tmp/flip.out")"
done

if ! timeout 120 build/tools/zcland-bench --min 4096 --max 4194304 \
	--align aligned,page,malloc --src warm,flushed --thread none,busy \
	--iters 3 --csv "$tmp/zcland.csv" > "$tmp/zcland.out" 2>&1; then
	bad "zcland-bench failed: $(tail -n 3 "$tmp/zcland.out")"
else
	# 3 buffers x 2 sources x 2 threads x 11 sizes
	rows "$tmp/zcland.csv" 132
fi
[ "$fail" -eq 0 ] && echo "bench check: zcbench (tcp, shm) and zcland-bench verified every message"
exit "$fail"
