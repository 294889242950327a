#!/bin/bash
# check.sh - the manual pages under man/.
#
# Fails when an exported call (every zcr_* symbol of lib/libzcrecv.map) or a
# tool (every tools/*.c) has no page, when a section 1 page names no tool
# or a section 3 page a call the map does not export, when a .so link points nowhere or at a page
# whose NAME does not list it, when a page lacks one of the sections every
# page must have, carries another version than the VERSION file, when
# zcrecv(4) misses a counter or module parameter of kmod/, or when
# `man --warnings` prints anything on stderr while rendering it.
#
# Usage: tests/man/check.sh   (no arguments; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/man" || exit 1
fail=0
bad() { echo "man check: $*"; fail=1; }
command -v man >/dev/null || {
	echo "man check: man missing: apt-get install man-db groff-base, or run tools/deps.sh"
	exit 1
}
version=$(cat "$root/VERSION")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# T = the page a file stands for: itself, or the target of its .so line.
target() {
	local first
	IFS= read -r first < "$1"
	case $first in
	'.so '*) T=${first#.so } ;;
	*) T=$1 ;;
	esac
}
# The lines of section $2 of page $1.
section() {
	awk -v s="$2" '/^\.SH / { on = ($0 == ".SH " s || $0 == ".SH \"" s "\"") ; next } on' "$1"
}

# Every exported call has a page, and a page of section 3 only for those.
syms=$(sed -n 's/^[[:space:]]*\(zcr_[A-Za-z0-9_]*\);.*/\1/p' "$root/lib/libzcrecv.map" | sort -u)
[ -n "$syms" ] || bad "no zcr_ symbol found in lib/libzcrecv.map"
declare -A exported
for s in $syms; do
	exported[$s]=1
	[ -f "man3/$s.3" ] || { bad "$s is exported (lib/libzcrecv.map) but man/man3/$s.3 is missing"; continue; }
	target "man3/$s.3"
	t=$T
	[ -f "$t" ] || { bad "man3/$s.3: .so target $t missing"; continue; }
	section "$t" NAME | grep -qw -- "$s" || bad "$t: NAME does not list $s"
	section "$t" SYNOPSIS | grep -q -- "$s(" || bad "$t: SYNOPSIS does not declare $s"
done
for f in man3/*.3; do
	n=$(basename "$f" .3)
	[ -n "${exported[$n]:-}" ] || bad "$f documents $n, which lib/libzcrecv.map does not export"
done

# Every tool has a section 1 page, and every section 1 page a tool.
for c in "$root"/tools/*.c; do
	n=$(basename "$c" .c)
	[ -f "man1/$n.1" ] || bad "tools/$n.c has no page man/man1/$n.1"
done
# A page of section 1 names a tool: a program tools/NAME.c, or a command
# script tools/NAME.sh or tools/*/NAME (zcapps, zccluster).
for f in man1/*.1; do
	n=$(basename "$f" .1)
	[ -f "$root/tools/$n.c" ] || [ -f "$root/tools/$n.sh" ] ||
		compgen -G "$root/tools/*/$n" >/dev/null ||
		bad "$f: no tool tools/$n.c, tools/$n.sh or tools/*/$n"
done

pages=()
for f in man[1-8]/*.[1-8]; do
	target "$f"
	t=$T
	if [ "$t" != "$f" ]; then
		# A link: one line, to a real page.
		mapfile -t lines < "$f"
		[ "${#lines[@]}" -eq 1 ] || bad "$f: a .so page has one line"
		[ -f "$t" ] && target "$t" && [ "$T" = "$t" ] || bad "$f: .so $t is not a page"
		continue
	fi
	pages+=("$f")
	sec=${f##*.}
	req=(NAME SYNOPSIS DESCRIPTION ERRORS HISTORY "SEE ALSO")
	if [ "$sec" = 1 ]; then req+=("EXIT STATUS"); else req+=("RETURN VALUE"); fi
	heads=$(sed -n 's/^\.SH "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$f")
	for s in "${req[@]}"; do
		grep -qx -- "$s" <<< "$heads" || bad "$f: no $s section"
	done
	section "$f" HISTORY | grep -q "$version\|[0-9]\.[0-9]*\.[0-9]" ||
		bad "$f: HISTORY names no version"
	grep -q "^\.TH .*\"zcrecv $version\"" "$f" ||
		bad "$f: .TH does not say \"zcrecv $version\" (the VERSION file)"
	# Every other name in NAME has its own file (a page or a link).
	for n in $(section "$f" NAME | tr '\n' ' ' | sed 's/\\-.*//' | tr ',' ' '); do
		[ -f "man$sec/$n.$sec" ] || bad "$f: NAME lists $n but man$sec/$n.$sec is missing"
	done
done

# zcrecv(4) names every sysfs counter and module parameter of kmod/.
for n in $(sed -n 's/^[[:space:]]*\[ZCRECV_CNT_[A-Z_]*\][[:space:]]*= "\([a-z_]*\)",/\1/p' "$root"/kmod/*.c) \
	 $(sed -n 's/^module_param\(_named\|_cb\)\?(\([a-z_]*\),.*/\2/p' "$root"/kmod/*.c); do
	grep -qw -- "$n" man4/zcrecv.4 || bad "man4/zcrecv.4 does not describe $n (kmod/)"
done

# Render each page as man does for a reader (the links were checked above
# to point at one of these).
n=0
for f in "${pages[@]}"; do
	MANWIDTH=80 man --warnings -l "$f" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ] || [ ! -s "$tmp/out" ]; then
		bad "$f: man --warnings exit $rc, stderr:"
		sed 's/^/    /' "$tmp/err"
	fi
	n=$((n + 1))
done
[ "$fail" -eq 0 ] && echo "man check: $n pages, $(echo "$syms" | wc -w) exported calls, every tool: ok"
exit $fail
