#!/bin/bash
# check-lib-abi.sh - binaries built against the public header of each
# release (tests/abi/zcrecv-X.Y.h, fixtures) must run with the current
# build/lib/libzcrecv.so: each release's symbol versions must still be
# exported and its entry points must keep its struct sizes. For every
# fixture zcrecv-X.Y.h, tests/abi/app-X.Y.c is built against it alone,
# must bind the symbols of ZCRECV_X.Y named below, and must exit 0.
#
# Usage: tests/abi/check-lib-abi.sh   (no arguments, after make; make test runs it)
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/lib
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -e "$lib/libzcrecv.so" ] || { echo "no $lib/libzcrecv.so: run make" >&2; exit 1; }
# Symbols each app must bind at its release's version.
declare -A binds=(
	[0.1]="zcr_ctx_create zcr_ctx_stats zcr_send"
	[0.2]="zcr_ctx_create_sized zcr_ctx_stats_sized zcr_ep_close zcr_iprobe zcr_improbe zcr_job_ep zcr_issend_comm"
)
n=0
for h in "$root"/tests/abi/zcrecv-*.h; do
	v=$(basename "$h" .h)
	v=${v#zcrecv-}
	[ -f "$root/tests/abi/app-$v.c" ] || { echo "fixture $h has no app-$v.c" >&2; exit 1; }
	[ -n "${binds[$v]:-}" ] || { echo "check-lib-abi.sh names no symbols for $v" >&2; exit 1; }
	# Only the fixture is on the include path, never include/zcrecv.h.
	gcc -std=gnu11 -Wall -Wextra -Werror -I"$root/tests/abi" \
		-o "$out/app-$v" "$root/tests/abi/app-$v.c" -L"$lib" -lzcrecv
	for s in ${binds[$v]}; do
		readelf --dyn-syms -W "$out/app-$v" | grep -q " $s@ZCRECV_$v" || {
			echo "app-$v does not bind $s@ZCRECV_$v" >&2
			exit 1
		}
	done
	LD_LIBRARY_PATH=$lib timeout 60 "$out/app-$v"
	n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "fewer fixtures than releases (0.1, 0.2)" >&2; exit 1; }
