#!/bin/bash
# make-traces.sh - regenerate the bundled traces under tests/traces/.
#
# Usage: tools/mpi/make-traces.sh [OUTDIR]     (default tests/traces)
#        tools/mpi/make-traces.sh -h|--help
#
# Runs each small MPI application of tools/mpi/ with 4 ranks under Open MPI
# with build/tools/mpi/libzctrace.so preloaded, writing OUTDIR/<app>/
# rank-NNNN.trace; then cg under MPICH (libzctrace-mpich.so) and the
# Fortran ring under both, which checks the Fortran wrappers (no missing
# and no double-counted calls). Run `make` first. Shared memory only, no
# network: Open MPI uses the self and vader transports.
set -euo pipefail
usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }
case ${1:-} in
-h|--help) usage; exit 0 ;;
-*) usage >&2; exit 2 ;;
esac
[ $# -le 1 ] || { usage >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${1:-tests/traces}
bin=build/tools/mpi
np=4

ompi() {	# ompi DIR PROG ARGS...
	local dir=$1
	shift
	rm -rf "$dir" && mkdir -p "$dir"
	ZCRECV_TRACE_DIR=$dir timeout 120 mpirun --allow-run-as-root \
		--oversubscribe --mca btl self,vader \
		--mca btl_vader_single_copy_mechanism none \
		-x ZCRECV_TRACE_DIR -x LD_PRELOAD="$root/$bin/libzctrace.so" \
		-np $np "$@" </dev/null
}

mpich() {	# mpich DIR PROG ARGS...
	local dir=$1
	shift
	rm -rf "$dir" && mkdir -p "$dir"
	timeout 120 mpiexec.mpich -launcher fork -n $np \
		-genv ZCRECV_TRACE_DIR "$dir" \
		-genv LD_PRELOAD "$root/$bin/libzctrace-mpich.so" \
		"$@" </dev/null
}

for app in poisson matmul nbody fft cg; do
	ompi "$out/$app" "$bin/$app"
done
[ -x "$bin/ring" ] && ompi "$out/ring-f90" "$bin/ring"
if [ -f "$bin/libzctrace-mpich.so" ]; then
	mpich "$out/cg-mpich" "$bin/cg-mpich"
	[ -x "$bin/ring-mpich" ] && mpich "$out/ring-f90-mpich" "$bin/ring-mpich"
fi
build/tools/zcpredict -q -p select "$out"/*/ >/dev/null
du -sh "$out"/*/

# Golden hit ratios of every predictor on every bundled trace, checked by
# tests/unit/test_predict_golden.c.
if [ "$out" = tests/traces ]; then
	{
		echo "app,predictor,stream,calls,ident_1,ident_k,buffer_1,buffer_k,big_calls,big_buffer_1,big_buffer_k,period"
		for d in "$out"/*/; do
			app=$(basename "$d")
			build/tools/zcpredict -q -f csv -k 10 -t 8192 "$d" |
				awk -F, -v app="$app" 'NR > 1 {
					print app "," $2 "," $3 "," $6 "," $7 "," $8 "," \
					      $9 "," $10 "," $11 "," $14 "," $15 "," $17 }'
		done
	} > "$out/golden.csv"
fi
