#!/bin/bash
# check-zccoll.sh - the collective benchmark driver tools/zccoll.sh: its
# refusals (unknown collective, stack, carry mode, configuration, trials),
# the dry run's commands (one taskset per rank; every threshold 0 for the
# zcrecv stacks with --carry all and none with --carry default, nothing
# for the stock ones), and, where Open MPI and the layer are built, a
# tiny real run (one node, all-to-all, stock Open MPI and zcrecv, one
# trial): a row per size for each stack, the summary's ratios, and the
# layer's report of the calls it carried.
# Prints ok/not ok lines and "N passed, N failed".
#
# Usage: tests/tools/check-zccoll.sh   (no arguments; make test runs it)
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
refused() {	# refused MESSAGE-REGEX OPTIONS...: exit 2 and says why
	local want=$1
	shift
	tools/zccoll.sh --dry-run "$@" > "$tmp/out" 2> "$tmp/err"
	[ $? = 2 ] && grep -qE -- "$want" "$tmp/err" && [ ! -s "$tmp/out" ]
}
t "refuses an unknown collective" refused "unknown collective 'allfoo'" --colls allfoo
t "refuses an unknown stack" refused "unknown stack 'zc-fast'" --stacks ompi,zc-fast
t "refuses a bad carry mode" refused "--carry some" --carry some
t "refuses a bad configuration" refused "unknown configuration 'rack'" --configs rack
t "refuses zero trials" refused "--trials 0" --trials 0
t "refuses a bad node prefix" env ZCAPPS_PREFIX=Bad1 \
	bash -c 'tools/zccoll.sh --dry-run > "$0/out" 2> "$0/err"; [ $? = 2 ] &&
		grep -q "ZCAPPS_PREFIX: .Bad1." "$0/err" && [ ! -s "$0/out" ]' "$tmp"
# Two runs at once need two prefixes: the nodes are named after it.
t "dry run: the emulated nodes take ZCAPPS_PREFIX's names" env ZCAPPS_PREFIX=pq \
	bash -c 'tools/zccoll.sh --dry-run --configs 2n-10g --stacks ompi \
		--trials 1 | grep -q -- "--host pq1:1,pq2:1 "'

tools/zccoll.sh --dry-run --trials 2 --configs node --stacks ompi,zc-auto \
	--colls bcast,alltoall > "$tmp/dry" 2>&1
dry_rc=$?
t "dry run: exit 0, four runs" [ "$dry_rc:$(grep -c trial "$tmp/dry")" = 0:4 ]
t "dry run: one taskset per rank" \
	grep -q 'taskset -c 0 .*zcmpi_coll bench 0 2 : .*taskset -c 1 .*zcmpi_coll bench 0 2' "$tmp/dry"
t "dry run: trials alternate the first stack" \
	bash -c "grep trial '$tmp/dry' | cut -d' ' -f2 | tr '\n' ' ' | grep -qx 'ompi zc-auto zc-auto ompi '"
t "dry run --carry all: the zcrecv stack carries every size" \
	bash -c "grep '^node zc-auto' '$tmp/dry' | grep -q 'ZCRECV_MPI_COLL_ALLTOALL_MIN=0.*ZCRECV_MPI_COLL_BCAST_MIN=0'"
t "dry run: the stock stack gets no layer" \
	bash -c "! grep '^node ompi' '$tmp/dry' | grep -q 'LD_PRELOAD\|ZCRECV_'"
tools/zccoll.sh --dry-run --trials 1 --configs node --stacks zc-auto \
	--carry default > "$tmp/dry2" 2>&1
t "dry run --carry default: the layer's own thresholds" \
	bash -c "grep -q LD_PRELOAD '$tmp/dry2' && ! grep -q '_MIN=0' '$tmp/dry2'"

if [ -x build/tools/mpi/zcmpi_coll ] && [ -f build/tools/mpi/libzcrecv-mpi.so ] &&
   command -v mpirun > /dev/null; then
	tools/zccoll.sh --configs node --trials 1 --stacks ompi,zc-auto \
		--colls alltoall --no-png --out "$tmp/run" > "$tmp/run.log" 2>&1
	rc=$?
	t "a tiny run: exit 0" [ "$rc" = 0 ]
	t "a tiny run: a row per size (1 KiB to 4 MiB) for each stack" \
		[ "$(grep -c '^node,ompi,1,alltoall,' "$tmp/run/runs.csv")" = 7 -a \
		  "$(grep -c '^node,zc-auto,1,alltoall,' "$tmp/run/runs.csv")" = 7 ]
	t "a tiny run: the summary has both stacks' medians and the ratio" \
		bash -c "awk -F, 'NR > 1 && \$2 == \"alltoall\" && \$4 > 0 && \$7 == \"1.000\" && \$8 > 0 && \$11 > 0 && \$12 > 0 { k++ } END { exit k != 7 }' '$tmp/run/summary.csv'"
	t "a tiny run: the layer carried the calls (its report)" \
		bash -c "awk -F, 'NR > 1 && \$4 > 0 { k++ } END { exit k != 1 }' '$tmp/run/carried.csv'"
	[ $fail = 0 ] || sed 's/^/# /' "$tmp/run.log" | tail -20
else
	echo "# no Open MPI build of zcmpi_coll and the layer: the tiny run is left out"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
