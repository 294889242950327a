#!/bin/bash
# check-zcapps.sh - the application bench's arithmetic and its refusals,
# without running MPI: tools/zcapps-report.sh on made-up runs (medians,
# ratios to stock Open MPI, the per-trial range, the line that explains a
# loss, failed runs, a digest that differs), and tools/zcapps.sh's checks
# of its options. Prints ok/not ok lines and "N passed, N failed".
#
# Usage: tests/tools/check-zcapps.sh   (no arguments; make test runs it)
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
row() {	# cfg app stack trial status wall digest [early remaps]
	echo "$1,$2,p2p,late,$3,$4,$5,$6,1.0,0.01,0.2,100,10,ok,$7,20,${8:-0},${8:-0},${9:-0},0,4000000,3,24000000,2,0,0.1"
}
hdr=config,app,comm,post,stack,trial,status,wall,comp,start,wait,bytes,msgs,check,digest,zc_recv,early,hits,remaps,pages,copied,coll_calls,coll_bytes,shm_peers,tcp_peers,layer_s

{
	echo "$hdr"
	row node pes ompi 1 ok 2.0 aa
	row node pes zc-auto 1 ok 2.2 aa 10 5
	row node pes ompi 2 ok 2.4 aa
	row node pes zc-auto 2 ok 2.3 aa 10 5
	row node pes ompi 3 ok 2.1 aa
	row node pes zc-auto 3 ok 2.5 aa 10 5
	row node is ompi 1 ok 1.0 bb
	row node is zc-auto 1 exit1 '' ''
} > "$tmp/runs.csv"
tools/zcapps-report.sh "$tmp/runs.csv" "$tmp/out" > "$tmp/log" 2>&1
rc=$?
# pes: ompi 2.0 2.4 2.1 -> 2.1; zc 2.2 2.3 2.5 -> 2.3; ratio 1.095;
# trials 2.2/2.0 = 1.100, 2.3/2.4 = 0.958, 2.5/2.1 = 1.190.
t "report: exit 0 when digests agree" [ "$rc" = 0 ]
t "report: median, range and ratio of medians" \
	grep -q '^node,pes,p2p,late,zc-auto,3,3,2.3000,2.2000,2.5000,1.095,0.958,1.190,' "$tmp/out/summary.csv"
t "report: stock Open MPI is the reference" \
	grep -q '^node,pes,p2p,late,ompi,3,3,2.1000,2.0000,2.4000,1.000,1.000,1.000,' "$tmp/out/summary.csv"
t "report: a loss over 2% is explained" \
	grep -q 'node pes p2p/late zc-auto: 1.095x stock Open MPI.*10 early.*5 remapped.*collectives left to the MPI: 3 calls, 24.0 MB' "$tmp/log"
t "report: a program whose runs all failed says so" \
	grep -q 'node *is .*zc-auto .*all 1 runs failed' "$tmp/log"
t "report: summary.txt holds the table" grep -q '^node *pes ' "$tmp/out/summary.txt"

# The layer's report lines as a run's stderr has them: messages received
# summed over the ranks (a "pre-sent" later in the line is not it).
. tools/apps/stacks.bash
{
	echo "zcrecv-mpi: rank 1: msgs 140 sent 139 received, early 45, hits 23, remaps 21, pages 43008, copied 16838860 B, backend uffd-move, peers 1 shm 0 tcp, shared 64, in layer 0.295 s, collectives 9 calls 4202516 B, deferred 0, expected 0, carried coll 0 (0 B), prefetch asked 0 pre-sent 0 B saved 0 B wasted 0 B late 0 dropped 0"
	echo "zcrecv-mpi: rank 0: msgs 140 sent 141 received, early 90, hits 45, remaps 42, pages 64512, copied 113204268 B, backend uffd-move, peers 1 shm 0 tcp, shared 57, in layer 0.314 s, collectives 9 calls 4203132 B, deferred 0, expected 0, carried coll 0 (0 B), prefetch asked 3 pre-sent 4096 B saved 0 B wasted 0 B late 0 dropped 0"
} > "$tmp/report.err"
t "runs.csv: messages received over zcrecv summed from the report lines" \
	[ "$(zc_received "$tmp/report.err")" = 280 ]
t "runs.csv: early arrivals summed" [ "$(sumr "$tmp/report.err" early)" = 135 ]

# zc-pf and zc-nice are zc-auto with one variable more.
stack_line() {	# stack_line STACK: its command line on one node
	(bin=/b mpi=/m cluster=/c prefix=p zc_env= pin=0
	 command_of "$1" node is && echo "${CMD[*]}")
}
t "stacks: zc-nice is auto with the progress thread at nice 19" \
	grep -q 'ZCRECV_POLICY=auto -x ZCRECV_PROGRESS_NICE=19 /b/is' \
	<(stack_line zc-nice)
t "stacks: zc-pf is auto with prefetching" \
	grep -q 'ZCRECV_POLICY=auto -x ZCRECV_PREFETCH=1 /b/is' \
	<(stack_line zc-pf)

{ cat "$tmp/runs.csv"; row node pes zc-remap 1 ok 2.0 ab; } > "$tmp/bad.csv"
tools/zcapps-report.sh "$tmp/bad.csv" "$tmp/out2" > "$tmp/log2" 2>&1
rc=$?
t "report: a digest that differs fails" [ "$rc" = 1 ]
t "report: and names both runs" grep -q 'digest mismatch: pes p2p late: aa (node ompi trial 1) against ab (node zc-remap trial 1)' "$tmp/log2"
if command -v gnuplot >/dev/null; then
	t "report: the plot is written" tools/zcapps-report.sh --png "$tmp/out/summary.csv" "$tmp/apps.png"
fi

refused() {	# refused MESSAGE-REGEX ARGS...: exit 2 with that message
	local re=$1
	shift
	tools/zcapps.sh --dry-run "$@" > "$tmp/o" 2> "$tmp/e"
	[ $? = 2 ] && grep -q -- "$re" "$tmp/e"
}
t "zcapps: unknown program refused" refused "unknown program 'xx'" --apps pes,xx
t "zcapps: unknown stack refused" refused "unknown stack 'zc-fast'" --stacks ompi,zc-fast
t "zcapps: bad rate refused" refused "2n-1x" --configs 2n-1x
t "zcapps: bad trials refused" refused "--trials 0" --trials 0
t "zcapps: an option without its value refused" refused "--out needs a value" --out
tools/zcapps.sh --dry-run --configs node,2n-1g --stacks ompi,zc-remap,mpich \
	--apps ft --trials 2 > "$tmp/dry" 2>&1
t "zcapps: dry run lists every run, stacks alternating" \
	grep -q '^\[4/12\] .*mpirun --bind-to none -np 2 -x LD_PRELOAD=.*libzcrecv-mpi.so .*ZCRECV_POLICY=remap .*/ft --comm p2p --post late' "$tmp/dry"
t "zcapps: across nodes through the cluster's launcher" \
	grep -q '^\[7/12\] .*zccluster mpirun -- --host zca1:1,zca2:1 -np 2 .*/ft ' "$tmp/dry"

# A job that prints its result, then never exits (as the MPIs sometimes
# do in MPI_Finalize across busy nodes): stopped after --grace, kept.
if command -v mpirun >/dev/null; then
	mkdir -p "$tmp/bin"
	cat > "$tmp/bin/pes" <<'PROG'
#!/bin/bash
[ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] && echo "zcapp: app=pes ranks=2 comm=p2p post=late size=1 iters=1 wall=0.5 comp=0.4 start=0.01 wait=0.09 bytes=1 msgs=1 check=ok digest=00000000000000aa"
exec sleep 311
PROG
	chmod +x "$tmp/bin/pes"
	ZCAPPS_BIN=$tmp/bin tools/zcapps.sh --configs node --stacks ompi \
		--apps pes --trials 1 --grace 2 --no-png --out "$tmp/hung" \
		> "$tmp/hlog" 2>&1
	rc=$?
	t "zcapps: a job hung after its result is stopped and kept" \
		grep -q 'ompi .*(1 hung at exit)' "$tmp/hlog"
	t "zcapps: and the bench does not fail for it" [ "$rc" = 0 ]
	t "zcapps: nothing of the job is left running" \
		bash -c "! pgrep -fx 'sleep 311' >/dev/null"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
