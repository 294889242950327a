#!/bin/bash
# check-zcoverlap.sh - the overlap driver tools/zcoverlap.sh: its table and
# H from made-up runs (--report), the FT and SpMV models from hand-made
# LogGP parameters against numbers worked out by hand, a digest that
# differs, its refusals, the dry run's commands (one taskset per rank,
# ovloggp per stack), that an interrupted driver stops its job, and,
# where Open MPI and the probes are built, a tiny real run that ends in
# the tables.
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
		row zc-auto $tr x P 0 1.0 0 bb 4
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
# Where the time went: ompi S's median wall 1.6 against E's 2.0, the
# same computation; per rank start 0.01, wait 0.1, barrier 0.01.
t "phases: medians per rank and X against bulk" \
	grep -q '^node   ovft    ompi      S     0.08    3   1.6000   1.0000   0.0100   0.1000   0.0100    0.800 (0.75..0.85)     1.000$' "$tmp/out/phases.txt"
t "phases: the bulk version has no ratio" \
	grep -q '^node,ovft,zc-auto,E,0.08,3,2.0,1.2,0.01,0.1,0.01,,,,$' "$tmp/out/phases.csv"
t "phases: scale 0 against the bulk version at 0" \
	grep -q '^node,ovft,zc-auto,E,0,3,0.8,0,0.01,0.1,0.01,,,,$' "$tmp/out/phases.csv"
t "phases: Pencils against Exchange without computation" \
	grep -q '^node,ovft,zc-auto,P,0,3,1.0,0,0.01,0.1,0.01,1.250,1.2500,1.2500,$' "$tmp/out/phases.csv"
{ cat "$tmp/runs.csv"; row zc-auto 4 x S 0.08 1.2 1.2 ab; } > "$tmp/bad.csv"
tools/zcoverlap.sh --report "$tmp/bad.csv" "$tmp/out2" > "$tmp/log2" 2>&1
t "report: a digest that differs fails" [ $? = 1 ]
t "report: and names it" grep -q 'digest mismatch: ovft scale 0.08: aa' "$tmp/log2"

# The models from hand-made LogGP parameters (the numbers worked out by
# hand, Documentation/apps.md "The models"): L 10 us everywhere; at 8 B
# o 2 us, g 4 us; at 64 KiB o 10 us, g 20 us, G 2 ns/B; at 4 MiB o the
# median of 30, 40, 50 us (a failed run's 1 s ignored), g 10 us, G 1
# ns/B; copy 0.1 ns/B. Ten steps of each run, two ranks.
mkdir -p "$tmp/m"
{
	echo "config,stack,trial,status,bytes,count,L,o,g,G,copy"
	for c in node 2n-1g; do
		echo "$c,zc-auto,1,ok,8,1024,1e-05,2e-06,4e-06,1e-09,0"
		echo "$c,zc-auto,1,ok,65536,256,1e-05,1e-05,2e-05,2e-09,1e-10"
		echo "$c,zc-auto,1,ok,4194304,4,1e-05,3e-05,1e-05,1e-09,1e-10"
	done
	echo "node,zc-auto,2,ok,4194304,4,1e-05,5e-05,1e-05,1e-09,1e-10"
	echo "node,zc-auto,3,ok,4194304,4,1e-05,4e-05,1e-05,1e-09,1e-10"
	echo "node,zc-auto,4,timeout,4194304,4,1e-05,1,1e-05,1e-09,1e-10"
} > "$tmp/m/loggp.csv"
mrow() {	# config app stack trial kind version scale wall comp N R rows
	echo "$1,$2,$3,$4,$5,$6,$7,ok,$8,$9,0.001,0.002,0.0001,10,ok,d$2$7,0,0,0,0,0,0,0,2,${10},10,${11},${12}"
}
{
	echo "config,app,stack,trial,kind,version,scale,status,wall,comp,start,wait,barrier,msgs,check,digest,early,hits,remaps,copied,deferred,shared,layer_s,ranks,size,iters,len,rows"
	mrow node ovft zc-auto 1 bulk E 0.08 0.05 0.01 128 4096 ""
	mrow node ovft zc-auto 2 bulk E 0.08 0.06 0.01 128 4096 ""
	mrow node ovft zc-auto 1 x S 0.08 1.0 1.0 128 4096 ""
	mrow node ovft zc-auto 1 x X:4 0 0.1 0 128 4096 ""
	mrow node ovspmv zc-auto 1 x G 0.02 0.2 0.2 1048576 "" 8192
	mrow node ovspmv zc-auto 1 x G 0.01 0.12 0.1 1048576 "" 8192
	mrow node ovspmv zc-auto 1 x S 0 0.04 0 1048576 "" 0
	mrow node ovspmv zc-auto 1 bulk B 0.02 0.3 0.2 1048576 "" 8192
	mrow node ovft ompi 1 bulk E 0.08 0.05 0.01 128 4096 ""
	mrow 2n-1g ovft zc-auto 1 bulk E 0.08 0.0439 0.01 128 4096 ""
} > "$tmp/m/runs.csv"
tools/zcoverlap.sh --report "$tmp/m/runs.csv" "$tmp/mout" > "$tmp/mlog" 2>&1
t "model: the report exits 0" [ $? = 0 ]
mcsv=$tmp/mout/model.csv
# E, 4 MiB slabs, 1 ms of computation a step: the transfer is longer,
# C + o + m G + L = 1 + 0.04 + 4.194304 + 0.01 ms, + 2 L of barriers =
# 5.264304 ms a step; the start is o + the 4 MiB put to itself (0.4194 ms).
t "model: FT Exchange, transfer-bound, medians and the per-trial range" \
	grep -q '^node,ovft,zc-auto,bulk,E,0.08,4194304,0.055,0.052643,-0.0429,-0.1226,0.0529,0.001,0.004594,0.002,0.037849,0.0001,0.000200,transfer$' "$mcsv"
# S, 100 ms a step: two halves of 50 ms, o, the put to itself: 100.4594
# ms + 2 L; no wait.
t "model: FT Slabs, bound by the computation and initiation" \
	grep -q '^node,ovft,zc-auto,x,S,0.08,4194304,1.0,1.004794,0.0048,0.0048,0.0048,0.001,0.004594,0.002,0.000000,0.0001,0.000200,init$' "$mcsv"
# X:4 at scale 0: 1 MiB messages, parameters 5/21 of the way from 64 KiB
# to 4 MiB (o 17.14 us, G 1.7619 ns/B): o + 4 m G + L = 7.417 ms + 2 L.
t "model: FT X:4, parameters between two measured sizes" \
	grep -q '^node,ovft,zc-auto,x,X:4,0,1048576,0.1,0.074371,-0.2563,-0.2563,-0.2563,0.001,0.004880,0.002,0.069291,0.0001,0.000200,transfer$' "$mcsv"
# G: blocks of 10 ms, the request's o at 8 B, the answer's at 4 MiB:
# (2 + 10000) + 10000 + 40 us beats 2 + 5000 (the owner looks after 4096
# of 8192 rows) + 40 + 20 + 4194.3 + 10000 us.
t "model: SpMV Gather, the owner's answer and its look" \
	grep -q '^node,ovspmv,zc-auto,x,G,0.02,4194304,0.2,0.200620,0.0031,0.0031,0.0031,0.001,0.000420,0.002,0.000000,0.0001,0.000200,init$' "$mcsv"
# With 5 ms blocks the answer is the longer: 2 + 2500 + 40 + 20 + 4194.3
# + 5000 us against 2 + 10000 + 40.
t "model: SpMV Gather, bound by the answer" \
	grep -q '^node,ovspmv,zc-auto,x,G,0.01,4194304,0.12,0.117763,-0.0186,-0.0186,-0.0186,0.001,0.000420,0.002,0.017143,0.0001,0.000200,transfer$' "$mcsv"
t "model: SpMV Scatter without computation: o + L + b G" \
	grep -q '^node,ovspmv,zc-auto,x,S,0,4194304,0.04,0.042643,0.0661,0.0661,0.0661,0.001,0.000400,0.002,0.042043,0.0001,0.000200,transfer$' "$mcsv"
t "model: SpMV Bulk: fetch everything, then compute" \
	grep -q '^node,ovspmv,zc-auto,bulk,B,0.02,4194304,0.3,0.242763,-0.1908,-0.1908,-0.1908,0.001,0.000420,0.002,0.042143,0.0001,0.000200,transfer$' "$mcsv"
t "model: +-15% on one host: 5 of 7" \
	grep -q '^model: node zc-auto: 5 of 7 points within +-15%$' "$tmp/mlog"
t "model: +-25% across nodes: +19.9% is in" \
	grep -q '^model: 2n-1g zc-auto: 1 of 1 points within +-25%$' "$tmp/mlog"
t "model: the criterion per configuration" \
	grep -q '^model: node: 5 of 7 points within +-15% (71%; the criterion: 80%)$' "$tmp/mlog"
t "model: a stack without parameters is named, not modelled" \
	grep -q '^model: node ompi: no LogGP parameters, not modelled$' "$tmp/mlog"
t "model: the parameters' medians, a failed run left out" \
	grep -q '^node   zc-auto      4194304    10.000    40.000    10.000    1.0000    0.1000$' "$tmp/mout/loggp.txt"

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
ZCAPPS_PREFIX=Bad t "zcoverlap: a bad ZCAPPS_PREFIX refused" refused "ZCAPPS_PREFIX: 'Bad'" 
tools/zcoverlap.sh --dry-run --stacks ompi,zc-auto --apps ovft --versions P \
	--trials 2 --loggp "--iters 3" > "$tmp/dry" 2>&1
t "zcoverlap: dry run: 16 runs, ovloggp, bulk, no computation, P" \
	grep -q '^\[16/16\] mpirun .*ovft --post late --version P --scale 0.08' "$tmp/dry"
t "zcoverlap: one taskset per rank, the layer in each context" \
	grep -q '^\[4/16\] mpirun --bind-to none -np 1 -x LD_PRELOAD=.*libzcrecv-mpi.so .*taskset -c 0 .*ovft --post late --version E --scale 0.08 : -np 1 -x LD_PRELOAD=.* taskset -c 1 ' "$tmp/dry"
t "zcoverlap: ovloggp first in a trial, each stack, with --loggp's options" \
	grep -q '^\[2/16\] mpirun --bind-to none -np 1 -x LD_PRELOAD=.*libzcrecv-mpi.so .*taskset -c 0 .*ovloggp --post late --iters 3 : ' "$tmp/dry"
tools/zcoverlap.sh --dry-run --configs 2n-1g --stacks ompi,mpich --apps ovft \
	--versions S --trials 1 > "$tmp/dry3" 2>&1
t "zcoverlap: across the emulated nodes each rank pinned by its rank number" \
	eval 'grep -q "^\[1/8\] .*zccluster mpirun -- --host zco1:1,zco2:1 -np 2 sh -c exec taskset -c \"\${OMPI_COMM_WORLD_RANK:-\$PMI_RANK}\" \"\$0\" \"\$@\" .*/ovloggp --post late\$" "$tmp/dry3" &&
	      grep -q "^\[2/8\] .*zccluster mpiexec -- .* -n 2 sh -c exec taskset .*/ovloggp-mpich --post late\$" "$tmp/dry3"'
tools/zcoverlap.sh --dry-run --stacks ompi --apps ovft --versions P --no-model \
	--trials 5 > "$tmp/dry2" 2>&1
t "zcoverlap: --no-model runs no ovloggp" \
	eval 'grep -q "^\[15/15\] " "$tmp/dry2" && ! grep -q ovloggp "$tmp/dry2"'

# A driver stopped by a signal stops the job it was waiting for.
cat > "$tmp/drv" <<EOF
die() { exit 2; }
. "$root/tools/apps/stacks.bash"
timeout=100 grace=20
CMD=(sleep 77.$$)
launch_and_wait "$tmp/job"
EOF
bash "$tmp/drv" &
drv=$!
for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -f "sleep 77.$$" >/dev/null && break; sleep 0.2; done
kill -TERM "$drv"
wait "$drv" 2>/dev/null
sleep 1.5
t "stacks.bash: an interrupted driver stops its running job" \
	eval '! pgrep -f "sleep 77.$$" >/dev/null'

if command -v mpirun >/dev/null && command -v taskset >/dev/null &&
   [ -x build/tools/apps/ovft ] && [ -x build/tools/apps/ovspmv ]; then
	tools/zcoverlap.sh --stacks ompi --trials 1 --versions P,G \
		--loggp "--iters 1 --size 65536 --sizes 8,65536" \
		--out "$tmp/real" -- --size 32 --iters 2 > "$tmp/rlog" 2>&1
	t "zcoverlap: a tiny real run exits 0" [ $? = 0 ]
	t "zcoverlap: and prints the table" \
		grep -q '^node *ovspmv *ompi *G ' "$tmp/rlog"
	t "zcoverlap: and writes the CSV" grep -q '^node,ovft,ompi,P,E,' "$tmp/real/overlap.csv"
	t "zcoverlap: ovloggp's parameters, both sizes" \
		eval 'grep -q "^node,ompi,1,ok,8,1024," "$tmp/real/loggp.csv" &&
		      grep -q "^node,ompi,1,ok,65536,4," "$tmp/real/loggp.csv"'
	t "zcoverlap: the models of all six runs" \
		grep -q '^model: node ompi: [0-9]* of 6 points within +-15%$' "$tmp/rlog"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
