#!/bin/bash
# run-vm.sh - boot a Debian kernel in QEMU with zcrecv.ko and run commands.
#
# Usage: tools/vm/run-vm.sh [-k 6.1|6.12|6.12-rxe|all|VERSION] [-t TIMEOUT]
#                           [-n] [-R] [-B] [-o LOG] [-r RESULTS] [-f FILE]...
#                           -- CMD [CMD...]
#        tools/vm/run-vm.sh -h|--help
#   -k  kernel: a series (6.1, 6.12: the newest installed Debian cloud
#       kernel of it), all (each series in turn; -o is then ignored) or an
#       exact version as in /boot/vmlinuz-VERSION
#   -t  overall timeout in seconds (default 900)
#   -n  do not insmod zcrecv.ko at boot
#   -R  soft-RoCE: load rdma_rxe, crc32_generic and dummy (with dependencies) from the
#       kernel's modules, give dummy0 10.77.0.1/24 and create rxe0 on it
#       (needs a kernel with rdma_rxe: -k 6.12-rxe); ibv_devices, ibv_devinfo
#       and the rxe provider of libibverbs come along
#   -B  boot for a benchmark: the TSC as clock source (under TCG the
#       default HPET makes each clock read a system call and an emulated
#       device access, about 3 us), no slub_debug or KFENCE sampling (they
#       slow every kernel allocation), and under TCG no ERMS/FSRM (TCG runs
#       rep movsb a byte per step: copies of 16 KiB-1 MiB 20-30x slower
#       than the rest of the guest); kernel errors still fail
#   -o  write the serial console to LOG (default build/vm/KVER/console.log)
#   -r  append "pass fail skip" totals to RESULTS
#   -f  copy FILE (an executable; its shared libraries come along) into /vm
#   CMD one test each, run by /bin/sh in the guest from /vm
#
# The guest's output is streamed to stdout. Exit status is non-zero on a failed
# test (exit code other than 0 or 4 = KSFT_SKIP), a test with no result line,
# a kernel log line that says BUG/WARNING/Oops/KFENCE/general protection/
# soft lockup/hung task, a guest that did not finish, or a timeout. A test
# still running after ZCRECV_VM_STALL_DUMP seconds (default 200) makes the
# guest print every user task's state, wait channel and kernel stack once.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
series=6.12
timeout_s=900
load=yes
rxe=no
bench=no
log=
results=
files=()
usage() { sed -n '2,33s/^# \{0,1\}//p' "$0"; }
for a in "$@"; do
	case $a in
	--) break ;;
	--help) usage; exit 0 ;;
	esac
done
while getopts "k:t:nRBo:r:f:h" opt; do
	case $opt in
	k) series=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	n) load=no ;;
	R) rxe=yes ;;
	B) bench=yes ;;
	o) log=$OPTARG ;;
	r) results=$OPTARG ;;
	f) files+=("$OPTARG") ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "run-vm.sh: no command to run (see -h)" >&2; exit 2; }

if [ "$series" = all ]; then
	args=(-t "$timeout_s")
	[ "$load" = yes ] || args+=(-n)
	[ "$rxe" = no ] || args+=(-R)
	[ -z "$results" ] || args+=(-r "$results")
	for f in "${files[@]}"; do args+=(-f "$f"); done
	rc=0
	for k in $("$root/tools/vm/kernels.sh" all); do
		"$0" -k "$k" "${args[@]}" -- "$@" || rc=1
	done
	exit $rc
fi

kver=$("$root/tools/vm/kernels.sh" "$series") || exit 2
kernel=/boot/vmlinuz-$kver
ko=$root/build/kmod/$kver/kmod/zcrecv.ko
[ -r "$kernel" ] || { echo "run-vm.sh: cannot read $kernel" >&2; exit 2; }
[ -r "$ko" ] || { echo "run-vm.sh: $ko missing: run make" >&2; exit 2; }

# A private work directory per run, so runs in parallel do not collide.
mkdir -p "$root/build/vm/$kver"
work=$(mktemp -d "$root/build/vm/$kver/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,vm/lib,etc}
[ -n "$log" ] || log=$root/build/vm/$kver/console.log
cp /bin/busybox "$rootfs/bin/busybox"
cp "$root/tools/vm/init" "$rootfs/init"
chmod 755 "$rootfs/init"
cp "$ko" "$rootfs/vm/zcrecv.ko"
echo "$load" > "$rootfs/vm/load-module"
if [ -n "${ZCRECV_VM_STALL_DUMP:-}" ]; then
	echo "$ZCRECV_VM_STALL_DUMP" > "$rootfs/vm/stall-dump"
fi
echo "root:x:0:0:root:/:/bin/sh" > "$rootfs/etc/passwd"

# Executables and the shared libraries they need, at the paths ld.so expects.
copy_libs() {
	{ ldd "$1" 2>/dev/null || true; } | awk '/=>/ {print $3} /^\t\// {print $1}' |
	while read -r lib; do
		[ -n "$lib" ] && [ -e "$lib" ] || continue
		mkdir -p "$rootfs$(dirname "$lib")"
		cp -L "$lib" "$rootfs$lib"
	done
}
for f in "${files[@]}"; do
	cp "$f" "$rootfs/vm/"
	copy_libs "$f"
done

# Soft-RoCE: the modules (decompressed for busybox insmod) in load order,
# dependencies first as modules.dep lists them; the rdma tool, the ibv_*
# utilities and the rxe provider that libibverbs loads with dlopen.
if [ "$rxe" = yes ]; then
	mdir=/lib/modules/$kver
	[ -r "$mdir/modules.dep" ] || { echo "run-vm.sh: no $mdir/modules.dep" >&2; exit 2; }
	mkdir -p "$rootfs/vm/rxe"
	: > "$rootfs/vm/rxe/order"
	# rxe computes its ICRC with the "crc32" crypto hash, a soft dependency
	# that modules.dep does not list.
	for m in dummy crc32_generic rdma_rxe; do
		line=$(grep -E "/$m\.ko(\.xz|\.zst|\.gz)?:" "$mdir/modules.dep") || {
			echo "run-vm.sh: $kver has no $m module (use -k 6.12-rxe)" >&2; exit 2; }
		deps=${line#*:}
		for d in $(printf '%s\n' $deps | tac) "${line%%:*}"; do
			n=$(basename "$d"); n=${n%%.ko*}
			grep -qx "$n" "$rootfs/vm/rxe/order" && continue
			case $d in
			*.xz) xz -dc "$mdir/$d" ;;
			*.zst) zstd -dcq "$mdir/$d" ;;
			*.gz) gzip -dc "$mdir/$d" ;;
			*) cat "$mdir/$d" ;;
			esac > "$rootfs/vm/rxe/$n.ko"
			echo "$n" >> "$rootfs/vm/rxe/order"
		done
	done
	for b in rdma ibv_devices ibv_devinfo; do
		p=$(command -v "$b") || { echo "run-vm.sh: $b missing (tools/deps.sh)" >&2; exit 2; }
		mkdir -p "$rootfs$(dirname "$p")"
		cp "$p" "$rootfs$p"
		copy_libs "$p"
	done
	prov=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
	[ -n "$prov" ] || { echo "run-vm.sh: no rxe provider (ibverbs-providers)" >&2; exit 2; }
	mkdir -p "$rootfs$(dirname "$prov")" "$rootfs/etc/libibverbs.d"
	cp "$prov" "$rootfs$prov"
	copy_libs "$prov"
	cp /etc/libibverbs.d/rxe.driver "$rootfs/etc/libibverbs.d/"
fi
printf '%s\n' "$@" > "$rootfs/vm/tests"
# ZCRECV_VM_TEST_TIMEOUT: seconds each command may run (init's default 300).
[ -z "${ZCRECV_VM_TEST_TIMEOUT:-}" ] ||
	echo "$ZCRECV_VM_TEST_TIMEOUT" > "$rootfs/vm/test-timeout"

(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.gz"

# KVM only where it really works: a quick probe boot (the same kernel and
# initramfs, with zcrecv.probe=1 so init only answers and powers off) decides
# once per machine, cached in build/vm/kvm-probe. Where KVM is absent or fails
# (nested KVM here aborts in QEMU at once), TCG is used without a word.
# ZCRECV_VM_ACCEL=tcg|kvm forces one.
accel=tcg
cpu=${ZCRECV_VM_CPU:-max}
case ${ZCRECV_VM_ACCEL:-auto} in
kvm) accel=kvm; cpu=host ;;
auto)
	probe=$root/build/vm/kvm-probe
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		if [ ! -f "$probe" ]; then
			if timeout -k 5 60 qemu-system-x86_64 -accel kvm -cpu host \
				-smp 1 -m 512M -kernel "$kernel" \
				-initrd "$work/initramfs.gz" \
				-append "console=ttyS0 panic=-1 rdinit=/init zcrecv.probe=1" \
				-display none -monitor none -serial stdio -no-reboot \
				-nic none </dev/null 2>/dev/null |
				grep -q '^zcrecv-vm: probe ok'; then
				echo kvm > "$probe"
			else
				echo tcg > "$probe"
			fi
		fi
		if [ "$(cat "$probe")" = kvm ]; then
			accel=kvm
			cpu=host
		fi
	fi
	;;
esac

# ZCRECV_VM_CPU: the -cpu model (default max; for -B under TCG without the
# fast string moves, see -B).
if [ $bench = yes ] && [ $accel = tcg ] && [ -z "${ZCRECV_VM_CPU:-}" ]; then
	cpu=max,-erms,-fsrm
fi

# slub_debug and a fast KFENCE catch memory misuse by the module; the console
# shows kernel errors, and init prints each test's full kernel log.
# -B trades them for timings closer to a real machine's.
append="console=ttyS0 loglevel=4 panic=-1 oops=panic"
if [ $bench = yes ]; then
	append+=" clocksource=tsc tsc=reliable"
else
	append+=" slub_debug=FZPU kfence.sample_interval=10"
fi
append+=" hung_task_timeout_secs=60 softlockup_panic=0 rdinit=/init"

boot() {
	echo "run-vm.sh: booting $kver ($accel, 2 vCPUs) for: $*"
	: > "$log"
	set +e
	timeout --foreground -k 10 "$timeout_s" \
		qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp 2 -m 2G \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "$append" -display none -monitor none \
		-serial "file:$log" -no-reboot -nic none </dev/null &
	qpid=$!
	tail -n +1 -F --pid=$qpid "$log" 2>/dev/null &
	tpid=$!
	wait $qpid
	qrc=$?
	sleep 0.2
	kill $tpid 2>/dev/null
	wait $tpid 2>/dev/null
	set -e
}

started=$SECONDS
boot "$@"
# A guest kernel that stopped on an int3 before /init said its first line
# ran nothing of ours (init loads zcrecv.ko after that line): under TCG the
# kernel's own text patching at boot was seen to stop a vCPU on the
# patch's int3 (Documentation/testing.md). Boot once more, within what is
# left of the timeout; the log of the first boot is kept, and the second
# is judged like any other. Any other early death is not retried.
if ! grep -q '^zcrecv-vm: kernel ' "$log" &&
   grep -q 'Oops: int3' "$log" &&
   [ $((timeout_s - (SECONDS - started))) -gt 30 ]; then
	cp "$log" "$log.boot1"
	timeout_s=$((timeout_s - (SECONDS - started)))
	echo "run-vm.sh: the guest kernel stopped on an int3 before /init" \
	     "started (log: $log.boot1); booting once more"
	boot "$@"
fi

"$root/tools/vm/check-log.sh" "$log" "$kver" "$qrc" "$#" "$results"
