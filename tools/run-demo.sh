#!/bin/bash
# run-demo.sh - the main job behind `make run`.
#
# Where /dev/zcrecv exists on this machine the demo runs natively; otherwise
# (as on a host whose kernel cannot load modules) it boots the newest Debian
# 6.12 kernel in QEMU with zcrecv.ko loaded and runs it there.
# ZCRECV_RUN_KERNEL=6.1 picks the other kernel.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
demo=(build/tools/zcinfo)
if [ -e /dev/zcrecv ]; then
	exec "${demo[@]}"
fi
echo "run-demo: /dev/zcrecv is not on this machine: running the demo in a VM"
exec tools/vm/run-vm.sh -k "${ZCRECV_RUN_KERNEL:-6.12}" -f build/tools/zcinfo -- ./zcinfo
