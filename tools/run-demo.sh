#!/bin/bash
# run-demo.sh - the main job behind `make run`: the copy-vs-remap ping-pong.
#
# Where /dev/zcrecv exists on this machine, zcbench runs natively (4 KiB to
# 16 MiB, copy / remap / auto, early and posted) with NetPIPE's NPtcp beside
# it. Otherwise (as on a host whose kernel cannot load modules) it:
#   1. boots Debian 6.12 in QEMU with zcrecv.ko loaded and runs zcbench there
#      (copy vs remap, 4 KiB to 1 MiB: a couple of minutes under TCG); the
#      guest prints the table, and the CSV between zcbench-csv-begin/end,
#      which is cut out of the console log into build/zcbench-vm.csv and
#      plotted on the host into build/zcbench-vm.png (EMULATED timings);
#   2. runs zcbench on this host (uffd-move or copy backend) with NPtcp over
#      the same loopback as the reference line: build/zcbench-host.csv and
#      build/zcbench-host.png;
#   3. runs zcland-bench on this host: the landing step alone, copy against
#      remap, 4 KiB to 64 MiB (build/zcland-host.csv, build/zcland-host.png).
#   4. runs zcbench over the shm transport (--transport shm) with NPopenmpi
#      (Open MPI's shared-memory path), NPopenmpi again over
#      libzcrecv-mpi.so (its messages carried by zcrecv) and NPtcp beside
#      it: build/zcbench-shm.csv and build/zcbench-shm.png.
#   5. runs the application bench's short version (tools/zcapps.sh --quick):
#      build/apps-quick/.
# ZCRECV_RUN_KERNEL=6.1 picks the other kernel; ZCRECV_DEMO_MAX=BYTES changes
# the largest size in the VM.
# Usage: tools/run-demo.sh [-h|--help]   (no options: run `make run`)
set -euo pipefail
case ${1:-} in
'') ;;
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bench=build/tools/zcbench
out=build

# The short application bench: the programs on this host, stock Open MPI
# against zcrecv's auto policy (make apps runs the whole of it).
run_apps() {
	echo
	echo "run-demo: applications on this host, stock Open MPI against zcrecv"
	if [ ! -x build/tools/apps/pes ]; then
		echo "run-demo: build/tools/apps not built (Open MPI's mpicc missing): skipped"
		return
	fi
	tools/zcapps.sh --quick --out "$out/apps-quick"
}

# Ranks on one host: zcbench over the shm transport, same run as NPopenmpi.
run_shm() {
	echo
	echo "run-demo: ranks on one host: the shm transport beside Open MPI's"
	echo "run-demo: shared-memory path (NPopenmpi, vader BTL, CMA) and NPtcp"
	uptime
	# Eight rounds, each beside an NPopenmpi run: vs_npo is their median.
	# With three, one demo read 0.87 of NPopenmpi at 2 MiB (early) while
	# runs of twelve in the same hour read 1.2-1.4; eight cost a minute.
	"$bench" --transport shm --min 4096 --max $((16 << 20)) --iters 20 \
		--trials 8 \
		--csv "$out/zcbench-shm.csv" --png "$out/zcbench-shm.png" \
		--nptcp --nptcp-file "$out/nptcp-shm.out" \
		--npopenmpi --npompi-file "$out/npopenmpi-shm.out" \
		--npopenmpi-layer build/tools/mpi/libzcrecv-mpi.so
}
if [ -e /dev/zcrecv ]; then
	"$bench" --min 4096 --max $((16 << 20)) --csv "$out/zcbench.csv" \
		--png "$out/zcbench.png" --nptcp
	run_shm
	echo
	echo "run-demo: the landing step alone (zcland-bench)"
	build/tools/zcland-bench --max $((64 << 20)) --iters 7 \
		--csv "$out/zcland.csv" --png "$out/zcland.png"
	run_apps
	exit
fi

echo "run-demo: /dev/zcrecv is not on this machine: running zcbench in a VM"
kver=$(tools/vm/kernels.sh "${ZCRECV_RUN_KERNEL:-6.12}")
log=$out/vm/$kver/demo.log
mkdir -p "$(dirname "$log")"
vmmax=${ZCRECV_DEMO_MAX:-$((1 << 20))}
tools/vm/run-vm.sh -B -k "$kver" -o "$log" -f build/tools/zcinfo -f "$bench" -- \
	./zcinfo \
	"./zcbench --min 4096 --max $vmmax --iters 8 --modes copy,remap --csv - --emulated"
sed -n '/^zcbench-csv-begin/,/^zcbench-csv-end/p' "$log" | tr -d '\r' |
	sed '1d;$d' > "$out/zcbench-vm.csv"
if [ ! -s "$out/zcbench-vm.csv" ]; then
	echo "run-demo: no CSV in $log" >&2
	exit 1
fi
echo "run-demo: $out/zcbench-vm.csv (Linux $kver, EMULATED under TCG)"
if "$bench" --plot-only "$out/zcbench-vm.csv" --png "$out/zcbench-vm.png" \
	--emulated; then
	echo "run-demo: plot written to $out/zcbench-vm.png"
fi

echo
echo "run-demo: the same ping-pong on this host, with NPtcp beside it"
"$bench" --min 4096 --max $((16 << 20)) --iters 20 \
	--csv "$out/zcbench-host.csv" --png "$out/zcbench-host.png" \
	--nptcp --nptcp-file "$out/nptcp-host.out"

echo
echo "run-demo: the landing step alone on this host (zcland-bench)"
build/tools/zcland-bench --max $((64 << 20)) --iters 7 \
	--csv "$out/zcland-host.csv" --png "$out/zcland-host.png"
run_shm
run_apps
