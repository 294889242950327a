#!/bin/bash
# deps.sh - install what zcrecv needs to build and test, on Debian 12.
#
# Idempotent: when everything is present it prints nothing and exits 0.
# Needs root (or sudo) only when something is missing. Kernel packages are
# resolved with apt-cache at run time: the newest Debian 6.1 cloud kernel
# (the linux-image-cloud-amd64 meta package) and the newest 6.12 cloud kernel
# (whose package name carries an ABI number that Debian bumps), and the
# newest generic (non-cloud) 6.12 kernel, whose rdma_rxe
# (soft-RoCE) module the verbs transport tests run on.
# `make test`, `make run`, `make apps` (and test-unit, test-vm, soak) run it first; plain
# `make`, `make lib` and `make install` never do.
#
# Usage: tools/deps.sh [--print]   (--print lists missing packages only)
#        tools/deps.sh -h|--help
set -euo pipefail

case ${1:-} in
''|--print) ;;
-h|--help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

# man-db and groff-base render the manual pages (checked by make test).
base_pkgs=(gcc libc6-dev make pkg-config liburing-dev libibverbs-dev rdma-core
	ibverbs-providers qemu-system-x86 busybox-static cpio xz-utils
	kmod bc flex bison libelf-dev libssl-dev perl man-db groff-base)
# Optional extras used by later tools; installed with the rest.
extra_pkgs=(gnuplot-nox netpipe-tcp netpipe-openmpi openmpi-bin libopenmpi-dev mpich
	libmpich-dev gfortran
	iproute2 dkms)
# The verbs tests and benchmark: ibv_devices/ibv_devinfo and the perftest
# reference (ib_send_lat, ib_write_bw); iproute2's rdma creates rxe0.
verbs_pkgs=(ibverbs-utils perftest)

missing=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed'; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

updated=
apt_update_once() {
	[ -n "$updated" ] && return
	as_root apt-get update -qq >/dev/null
	updated=1
}

newest_612() {
	# $1 = image|headers, $2 = flavour (cloud-amd64|amd64)
	apt-cache search --names-only "^linux-$1-6\\.12\\.[0-9]+\\+deb12-${2:-cloud-amd64}\$" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

for p in "${base_pkgs[@]}" "${extra_pkgs[@]}" "${verbs_pkgs[@]}"; do
	have "$p" || missing+=("$p")
done
kernel_pkgs=(linux-image-cloud-amd64 linux-headers-cloud-amd64 linux-source-6.12)
for p in "${kernel_pkgs[@]}"; do
	have "$p" || missing+=("$p")
done

# The 6.12 cloud kernel: present when any 6.12 cloud image and matching
# headers are installed; otherwise resolve the newest from the archive.
if ! ls /boot/vmlinuz-6.12.*-cloud-amd64 >/dev/null 2>&1 ||
   ! ls -d /usr/src/linux-headers-6.12.*-cloud-amd64 >/dev/null 2>&1; then
	img=$(newest_612 image)
	if [ -z "$img" ]; then
		apt_update_once
		img=$(newest_612 image)
	fi
	if [ -z "$img" ]; then
		echo "deps.sh: no Debian 6.12 cloud kernel found by apt-cache" >&2
		exit 1
	fi
	missing+=("$img" "${img/linux-image-/linux-headers-}")
fi

# The generic 6.12 kernel (rdma_rxe, veth, dummy as modules) with headers,
# so zcrecv.ko is built for it too; tools/vm/kernels.sh calls it 6.12-rxe.
if ! ls /boot/vmlinuz-6.12.*+deb12-amd64 >/dev/null 2>&1 ||
   ! ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 >/dev/null 2>&1; then
	img=$(newest_612 image amd64)
	if [ -z "$img" ]; then
		apt_update_once
		img=$(newest_612 image amd64)
	fi
	if [ -z "$img" ]; then
		echo "deps.sh: no Debian 6.12 generic kernel found by apt-cache" >&2
		exit 1
	fi
	missing+=("$img" "${img/linux-image-/linux-headers-}")
fi

if [ "${1:-}" = --print ]; then
	[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
apt_update_once
# No initramfs is needed for the VM kernels (the runner builds its own), but
# the image packages trigger one; keep it quiet. Recommends are not needed.
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends "${missing[@]}" >/tmp/zcrecv-deps.log 2>&1 || {
	tail -n 30 /tmp/zcrecv-deps.log >&2
	echo "deps.sh: apt-get install failed (log: /tmp/zcrecv-deps.log)" >&2
	exit 1
}
