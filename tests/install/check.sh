#!/bin/bash
# check.sh - `make install` into a scratch DESTDIR, then build and run a
# program with nothing but pkg-config's flags for the installed zcrecv.pc
# (and check the shared library's soname and exported symbols).
#
# Usage: tests/install/check.sh   (no arguments, after make; make test runs it)
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s --no-print-directory -C "$root" install DESTDIR="$tmp" PREFIX=/usr/local >/dev/null
lib=$tmp/usr/local/lib
export PKG_CONFIG_SYSROOT_DIR=$tmp PKG_CONFIG_LIBDIR=$lib/pkgconfig
cc -Wall -Werror -o "$tmp/app" "$root/tests/install/app.c" \
	$(pkg-config --cflags --libs zcrecv)
LD_LIBRARY_PATH=$lib "$tmp/app"
soname=$(objdump -p "$lib/libzcrecv.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libzcrecv.so.0 ] || { echo "check.sh: soname is '$soname'"; exit 1; }
# Only zcr_* symbols are exported, all in a versioned stanza.
bad=$(nm -D --defined-only "$lib/libzcrecv.so" | awk '$3 !~ /^zcr_/ && $3 !~ /^ZCRECV_/ {print $3}')
[ -z "$bad" ] || { echo "check.sh: unexpected exports: $bad"; exit 1; }
[ -f "$tmp/lib/udev/rules.d/60-zcrecv.rules" ] || { echo "check.sh: udev rule missing"; exit 1; }
# Manual pages, links included: man finds zcr_recv through its .so page.
man=$tmp/usr/local/share/man
for p in man1/zcinfo.1 man3/zcr_recv.3 man4/zcrecv.4 man7/zcrecv.7; do
	[ -f "$man/$p" ] || { echo "check.sh: $p not installed"; exit 1; }
done
MANWIDTH=80 man -M "$man" zcr_recv 2>&1 | grep -q '^ *zcr_send, zcr_recv[, ]' ||
	{ echo "check.sh: man zcr_recv does not show its page"; exit 1; }
echo "install check: headers, pkg-config, soname $soname, exports, man pages ok"
