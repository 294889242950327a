#!/bin/bash
# check-lib-abi.sh - a binary built against the 0.1 public header
# (tests/abi/zcrecv-0.1.h, a fixture) must run with the current
# build/lib/libzcrecv.so: the 0.1 symbol versions must still be exported
# and the 0.1 entry points must keep the 0.1 struct sizes.
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
# Only the fixture is on the include path, never include/zcrecv.h.
gcc -std=gnu11 -Wall -Wextra -Werror -I"$root/tests/abi" \
	-o "$out/app-0.1" "$root/tests/abi/app-0.1.c" -L"$lib" -lzcrecv
for s in zcr_ctx_create zcr_ctx_stats zcr_send; do
	readelf --dyn-syms -W "$out/app-0.1" | grep -q "$s@ZCRECV_0.1" || {
		echo "app-0.1 does not bind $s@ZCRECV_0.1" >&2
		exit 1
	}
done
LD_LIBRARY_PATH=$lib timeout 60 "$out/app-0.1"
