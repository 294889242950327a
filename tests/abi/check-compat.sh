#!/bin/bash
# check-compat.sh - compile tests/abi/layout.c for x86-64 and for i386: the
# uAPI layout and ioctl numbers must be the same for both (no 32-bit libc is
# needed: only the kernel's asm headers, reused from the 64-bit tree).
#
# Usage: tests/abi/check-compat.sh   (no arguments; make test runs it)
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
for m in -m64 -m32; do
	gcc "$m" -fsyntax-only -Wall -Werror -I"$root/include/uapi" \
		-I/usr/include/x86_64-linux-gnu "$root/tests/abi/layout.c"
done
echo "uAPI layout identical for -m64 and -m32"
