#!/bin/bash
# check-version.sh - the version is written once, in VERSION, and every
# place that carries it agrees: the header's macros (generated
# build/include/zcrecv_version.h), zcr_version() of the built library, the
# library's file name, zcrecv.pc, build/dkms.conf, the MODULE_VERSION of
# every built zcrecv.ko, the .TH line of every manual page and a NEWS.md
# heading. It also fails when a version is written by hand again where it
# is generated now (header macros, MODULE_VERSION, dkms.conf.in).
#
# Usage: tests/abi/check-version.sh   (no arguments, after make; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
fail=0
bad() { echo "version check: $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

v=$(cat VERSION)
[[ $v =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || { bad "VERSION is '$v', not MAJOR.MINOR.PATCH"; exit 1; }
mmp="${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
[ -e build/lib/libzcrecv.so ] || { bad "no build/lib/libzcrecv.so: run make"; exit 1; }

h=build/include/zcrecv_version.h
got=$(for p in MAJOR MINOR PATCH; do
	sed -n "s/^#define ZCRECV_VERSION_$p[[:space:]]*\([0-9]*\)$/\1/p" "$h"
done | tr '\n' ' ')
[ "$got" = "$mmp " ] || bad "$h says '$got', VERSION $v"

# zcr_version() as a program built with the public header sees it.
cat > "$tmp/v.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "zcrecv.h"
#define S2(x) #x
#define S(x) S2(x)
int main(void)
{
	const char *h = S(ZCRECV_VERSION_MAJOR) "." S(ZCRECV_VERSION_MINOR)
		"." S(ZCRECV_VERSION_PATCH);

	printf("%s %s\n", zcr_version(), h);
	return 0;
}
C
if gcc -Wall -Werror -Iinclude -Ibuild/include -o "$tmp/v" "$tmp/v.c" \
	-Lbuild/lib -lzcrecv; then
	got=$(LD_LIBRARY_PATH=build/lib "$tmp/v")
	[ "$got" = "$v $v" ] || bad "zcr_version() and the header say '$got', VERSION $v"
else
	bad "cannot build a program with include/zcrecv.h"
fi
[ -e "build/lib/libzcrecv.so.$v" ] || bad "no build/lib/libzcrecv.so.$v"
got=$(sed -n 's/^Version: //p' build/lib/zcrecv.pc)
[ "$got" = "$v" ] || bad "zcrecv.pc says '$got', VERSION $v"
got=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' build/dkms.conf)
[ "$got" = "$v" ] || bad "build/dkms.conf says '$got', VERSION $v"
n=0
for ko in build/kmod/*/kmod/zcrecv.ko; do
	[ -e "$ko" ] || continue
	got=$(modinfo -F version "$ko")
	[ "$got" = "$v" ] || bad "$ko: MODULE_VERSION '$got', VERSION $v"
	n=$((n + 1))
done
for f in man/man[1-8]/*.[1-8]; do
	head -n 1 "$f" | grep -q '^\.so ' && continue
	grep -q "^\.TH .*\"zcrecv $v\"" "$f" || bad "$f: .TH does not say \"zcrecv $v\""
done
grep -qE "^## (Since )?$v\b" NEWS.md || bad "NEWS.md has no heading for $v"

# Written by hand again where the value is generated now.
grep -nE '^#define ZCRECV_VERSION_(MAJOR|MINOR|PATCH)' include/zcrecv.h &&
	bad "include/zcrecv.h defines the version: it comes from VERSION"
grep -nE 'define ZCRECV_MODULE_VERSION|MODULE_VERSION\("' kmod/*.c kmod/*.h &&
	bad "kmod/ writes its version: it comes from VERSION (kmod/Kbuild)"
grep -nE 'PACKAGE_VERSION="[0-9]' dkms.conf.in &&
	bad "dkms.conf.in writes its version: @VERSION@"
[ "$fail" -eq 0 ] && echo "version check: $v everywhere (header, library, pc, dkms, $n module(s), man pages, NEWS)"
exit $fail
