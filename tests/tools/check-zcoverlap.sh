#!/bin/bash
# check-zcoverlap.sh - the overlap driver tools/zcoverlap.sh: its table and
# H from made-up runs (--report), a digest that differs, its refusals, the
# dry run's commands (one taskset per rank), and, where Open MPI and the
# probes are built, a tiny real run that ends in the table.
# Prints ok/not ok lines and "N passed, N failed".
#
# Usage: tests/tools/check-zcoverlap.sh   (no arguments; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 n=0
t() {	# t WHAT CMD...: one check
	n=$((n + 1))
	if "${@:2}"; then
		echo "ok $n - $1"; pass=$((pass + 1))
	else
		echo "not ok $n - $1"; fail=$((fail + 1))
	fi
}
row() {	# stack trial kind version scale wall comp digest [early]
	echo "node,ovft,$1,$2,$3,$4,$5,ok,$6,$7,0.01,0.1,0.01,10,ok,$8,${9:-0},${9:-0},0,0"
}
{
	echo "config,app,stack,trial,kind,version,scale,status,wall,comp,start,wait,barrier,msgs,check,digest,early,hits,remaps,copied"
	for tr in 1 2 3; do
		row ompi $tr bulk E 0.08 2.0 1.0 aa
		row ompi $tr comm E 0 1.0 0 bb
		row ompi $tr x S 0.08 1.$((tr + 4)) 1.0 aa
		row zc-auto $tr bulk E 0.08 2.0 1.2 aa 4
		row zc-auto $tr comm E 0 0.8 0 bb 4
		row zc-auto $tr x S 0.08 1.2 1.2 aa 4
	done
} > "$tmp/runs.csv"
tools/zcoverlap.sh --report "$tmp/runs.csv" "$tmp/out" > "$tmp/log" 2>&1
rc=$?
# ompi: T_E 2.0, T_X median(1.5 1.6 1.7) = 1.6, min(T_comm 1.0, T_comp
# 1.0) = 1.0: H 0.4, per trial 0.5..0.3. zc-auto: (2.0-1.2)/0.8 = 1.0.
t "report: exit 0 when digests agree" [ "$rc" = 0 ]
t "report: H from the medians, the per-trial range" \
	grep -q '^node *ovft *ompi *S *2.0000 *1.6000 *1.0000 *1.0000 *0.400 (0.30..0.50)' "$tmp/out/overlap.txt"
t "report: min(T_comm, T_comp) divides" \
	grep -q '^node,ovft,zc-auto,S,E,2.0,1.2,0.8,1.2,1.0000,1.0000,1.0000,4,4,0,0$' "$tmp/out/overlap.csv"
{ cat "$tmp/runs.csv"; row zc-auto 4 x S 0.08 1.2 1.2 ab; } > "$tmp/bad.csv"
tools/zcoverlap.sh --report "$tmp/bad.csv" "$tmp/out2" > "$tmp/log2" 2>&1
t "report: a digest that differs fails" [ $? = 1 ]
t "report: and names it" grep -q 'digest mismatch: ovft scale 0.08: aa' "$tmp/log2"

refused() {	# refused MESSAGE-REGEX ARGS...: exit 2 with that message
	local re=$1
	shift
	tools/zcoverlap.sh --dry-run "$@" > "$tmp/o" 2> "$tmp/e"
	[ $? = 2 ] && grep -q -- "$re" "$tmp/e"
}
t "zcoverlap: unknown program refused" refused "unknown program 'ft'" --apps ft
t "zcoverlap: unknown stack refused" refused "unknown stack 'zc-x'" --stacks zc-x
t "zcoverlap: a scale above 1 refused" refused "--scale 1.5" --scale 1.5
t "zcoverlap: versions no program has refused" refused "none of them" --apps ovspmv --versions P
t "zcoverlap: bad bind refused" refused "--bind all" --bind all
tools/zcoverlap.sh --dry-run --stacks ompi,zc-auto --apps ovft --versions P \
	--trials 2 > "$tmp/dry" 2>&1
t "zcoverlap: dry run: 12 runs, bulk, no computation, P" \
	grep -q '^\[12/12\] mpirun .*ovft --post late --version P --scale 0.08' "$tmp/dry"
t "zcoverlap: one taskset per rank, the layer in each context" \
	grep -q '^\[2/12\] mpirun --bind-to none -np 1 -x LD_PRELOAD=.*libzcrecv-mpi.so .*taskset -c 0 .*ovft --post late --version E --scale 0.08 : -np 1 -x LD_PRELOAD=.* taskset -c 1 ' "$tmp/dry"

if command -v mpirun >/dev/null && command -v taskset >/dev/null &&
   [ -x build/tools/apps/ovft ] && [ -x build/tools/apps/ovspmv ]; then
	tools/zcoverlap.sh --stacks ompi --trials 1 --versions P,G \
		--out "$tmp/real" -- --size 32 --iters 2 > "$tmp/rlog" 2>&1
	t "zcoverlap: a tiny real run exits 0" [ $? = 0 ]
	t "zcoverlap: and prints the table" \
		grep -q '^node *ovspmv *ompi *G ' "$tmp/rlog"
	t "zcoverlap: and writes the CSV" grep -q '^node,ovft,ompi,P,E,' "$tmp/real/overlap.csv"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
