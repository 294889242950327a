#!/bin/bash
# kernels.sh - print the installed kernel version for a series.
# Usage: tools/vm/kernels.sh 6.1|6.12|6.12-rxe|all|VERSION
# A series resolves to the newest installed Debian cloud kernel of it
# (/boot/vmlinuz-<version>); "all" prints the newest of every supported series.
# 6.12-rxe is the newest generic (non-cloud) 6.12 kernel: it has rdma_rxe
# (soft-RoCE) for the verbs tests; "all" does not include it.
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
newest() {
	local pat=$1
	ls /boot 2>/dev/null | sed -n "s/^vmlinuz-\($pat\)\$/\1/p" | sort -V | tail -n 1
}
case ${1:-all} in
6.1) v=$(newest '6\.1\.[0-9][0-9-]*-cloud-amd64') ;;
6.12) v=$(newest '6\.12\.[0-9][0-9.+a-z]*-cloud-amd64') ;;
6.12-rxe) v=$(newest '6\.12\.[0-9][0-9.]*+deb[0-9]*-amd64') ;;
all)
	for s in 6.1 6.12; do "$0" "$s"; done
	exit 0 ;;
*) [ -e "/boot/vmlinuz-$1" ] && v=$1 || v= ;;
esac
if [ -z "$v" ]; then
	echo "kernels.sh: no installed kernel for '${1:-}' (run tools/deps.sh)" >&2
	exit 1
fi
echo "$v"
