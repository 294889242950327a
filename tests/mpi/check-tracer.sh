#!/bin/bash
# check-tracer.sh - the MPI tracer end to end: run every sample MPI program
# under Open MPI (and MPICH, and the Fortran ring under both) with the
# LD_PRELOAD tracer, then check that each rank's fresh trace parses and has
# exactly the calls of the committed trace: the same seq, op, size, source
# and tag on every line (buffer addresses, communicator handles and call
# sites change from run to run with address-space randomisation).
#
# Usage: tests/mpi/check-tracer.sh   (no arguments, after make; make test runs it)
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tools/mpi/make-traces.sh "$tmp" > "$tmp/make-traces.log" 2>&1 || {
	cat "$tmp/make-traces.log"
	exit 1
}
fields() { grep -v '^#' "$1" | awk 'NF { print $1, $2, $4, $5, $6 }'; }
n=0
for dir in tests/traces/*/; do
	app=$(basename "$dir")
	[ -d "$tmp/$app" ] || { echo "check-tracer: no fresh trace for $app"; exit 1; }
	for f in "$dir"*.trace; do
		fresh=$tmp/$app/$(basename "$f")
		[ -f "$fresh" ] || { echo "check-tracer: $fresh missing"; exit 1; }
		if ! diff -q <(fields "$f") <(fields "$fresh") >/dev/null; then
			echo "check-tracer: $app/$(basename "$f") differs from the committed trace:"
			diff <(fields "$f") <(fields "$fresh") | head -5
			exit 1
		fi
		n=$((n + 1))
	done
	build/tools/zcpredict -q -p cycle "$tmp/$app" > /dev/null
done
echo "tracer: $n rank traces of $(ls -d tests/traces/*/ | wc -l) programs match the committed calls"
