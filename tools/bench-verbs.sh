#!/bin/bash
# bench-verbs.sh - the job behind `make bench-verbs`: the verbs transport on
# soft-RoCE, beside perftest over the same device, in one VM run.
#
# Boots the generic 6.12 kernel with rxe0 (tools/vm/run-vm.sh -R) and runs:
#   1. zcbench --transport verbs (copy and remap, early and posted, every
#      message verified) with --perftest: ib_send_lat and ib_write_bw over
#      rxe0 as reference lines; ZCRECV_VERBS_STATS=1 prints the transport's
#      counters (direct READs into staging, bytes bounced, registrations);
#   2. early arrivals in remap mode twice, side by side: the default (READ
#      straight into the staging slot, registered for that READ only) and
#      ZCRECV_VERBS_LAND=copy (READ into a registered bounce buffer, copy);
#   3. zcverbs-bench: copy, reg+dereg, exchange, rereg, ODP per size;
#   4. rxe0's counters (retransmissions: completer_retry_err).
# Writes build/bench-verbs/: console.log, zcbench-verbs.csv (+ .png, with
# the perftest lines), land-direct.csv, land-copy.csv, options.csv,
# perftest CSVs and summary.txt. All timings are EMULATED (TCG, soft-RoCE): compare ratios.
# ZCRECV_BENCH_VERBS_MAX=BYTES changes the largest size (default 1 MiB).
# Usage: tools/bench-verbs.sh [-h|--help]
set -euo pipefail
case ${1:-} in
'') ;;
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=build/bench-verbs
mkdir -p "$out"
kver=$(tools/vm/kernels.sh 6.12-rxe)
max=${ZCRECV_BENCH_VERBS_MAX:-$((1 << 20))}
log=$out/console.log
files=(-f build/tools/zcbench -f build/tools/zcverbs-bench)
for t in ib_send_lat ib_write_bw; do
	p=$(command -v "$t") || { echo "bench-verbs: $t missing (perftest)" >&2; exit 1; }
	files+=(-f "$p")
done
env='PATH=/vm:$PATH ZCRECV_VERBS_STATS=1'
ZCRECV_VM_TEST_TIMEOUT=1500 tools/vm/run-vm.sh -k "$kver" -R -t 3000 \
	-o "$log" "${files[@]}" -- \
	"$env ./zcbench --transport verbs --min 4096 --max $max --iters 6 --modes copy,remap --perftest --emulated --csv -" \
	"$env ./zcbench --transport verbs --min 65536 --max $max --iters 12 --modes remap --arrival early --emulated --csv -" \
	"$env ZCRECV_VERBS_LAND=copy ./zcbench --transport verbs --min 65536 --max $max --iters 12 --modes remap --arrival early --emulated --csv -" \
	"./zcverbs-bench --min 4096 --max $((4 << 20)) --iters 10 --emulated --csv -" \
	"cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | sed 's/^/rxe0-counter: /'"

# The blocks of the console: CSVs in order, perftest references by name.
tr -d '\r' < "$log" > "$out/console.txt"
block() {	# block BEGIN-REGEX N: the Nth block after a BEGIN line
	awk -v re="$1" -v want="$2" '
		$0 ~ re { n++; on = (n == want); next }
		/^zcbench-csv-end$|^zcbench-ref-end$|^zcverbs-csv-end$/ { on = 0 }
		on' "$out/console.txt"
}
block '^zcbench-csv-begin$' 1 > "$out/zcbench-verbs.csv"
block '^zcbench-csv-begin$' 2 > "$out/land-direct.csv"
block '^zcbench-csv-begin$' 3 > "$out/land-copy.csv"
block '^zcverbs-csv-begin$' 1 > "$out/options.csv"
block '^zcbench-ref-begin ib_send_lat$' 1 > "$out/ib_send_lat.csv"
block '^zcbench-ref-begin ib_write_bw$' 1 > "$out/ib_write_bw.csv"
for f in zcbench-verbs land-direct land-copy options; do
	[ -s "$out/$f.csv" ] || { echo "bench-verbs: no $f CSV in $log" >&2; exit 1; }
done
refs=()
for t in ib_send_lat ib_write_bw; do
	[ -s "$out/$t.csv" ] && refs+=(--ref "$out/$t.csv=perftest $t over rxe0")
done
build/tools/zcbench --transport verbs --plot-only "$out/zcbench-verbs.csv" \
	--png "$out/zcbench-verbs.png" --emulated "${refs[@]}" ||
	echo "bench-verbs: gnuplot failed or missing: no plot"
{
	echo "zcbench over the verbs transport on soft-RoCE, Linux $kver (EMULATED timings under TCG)"
	awk '/^zcrecv-vm: begin/ { print "== " substr($0, 18) }
	     /^mode / { on = 1 }
	     on && !/^\[kmsg\]/ { print }
	     /^zcbench: [0-9]+ iteration/ { on = 0 }
	     /^reference: perftest/ { ref = 1 }
	     /^zcbench-ref-begin/ { ref = 0 }
	     ref { print }
	     /^zcverbs-bench:/ { zv = 1 }
	     zv && !/^\[kmsg\]/ { print }
	     /^odp:/ { zv = 0 }
	     /^rxe0-counter: / { print }' "$out/console.txt"
} > "$out/summary.txt"
cat "$out/summary.txt"
echo "bench-verbs: $out/ (zcbench-verbs.csv/.png, land-direct.csv, land-copy.csv, options.csv, summary.txt)"
