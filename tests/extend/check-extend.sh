#!/bin/bash
# check-extend.sh - a transport, a remap backend and a predictor are each
# one folder plus one registry line (Documentation/extending.md): copies
# the tree to a temporary directory, adds the dummies of tests/extend/
# (lib/transport/dummy/, lib/remap/dummy/, lib/predict/dummy/) and one
# X(dummy) line to each registry, checks that nothing else differs,
# builds the library there (reusing this tree's objects: only what the
# dummies touch is compiled), checks its layers, and runs smoke.c with
# ZCRECV_BACKEND=dummy ZCRECV_PREDICTOR=dummy and dummy:// addresses.
#
# Usage: tests/extend/check-extend.sh   (no arguments, after make; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "extend check: $*"; exit 1; }

mkdir -p "$tmp/tools" "$tmp/build"
cp -a Makefile VERSION dkms.conf.in lib include "$tmp/" && cp -a tools/uring.mk "$tmp/tools/" || exit 1
[ -d build/lib ] && cp -a build/lib "$tmp/build/"

# The folders, and one line above each registry's closing comment.
for kind in transport remap predict; do
	cp -r "tests/extend/$kind/dummy" "$tmp/lib/$kind/dummy" || exit 1
done
add_line() {	# FILE LINE
	grep -qxF "$(printf '\t/* end of the registry */')" "$tmp/$1" ||
		fail "$1 has no registry end to add a line above"
	awk -v line="$2" '$0 == "\t/* end of the registry */" { print line } { print }' \
		"$tmp/$1" > "$tmp/reg" && mv "$tmp/reg" "$tmp/$1"
}
add_line lib/transport/transport.c "$(printf '\tX(dummy)\t\\')"
add_line lib/remap/engine.c "$(printf '\tX(dummy)\t\\')"
add_line lib/predict/predict.c "$(printf '\tX(dummy)\t\t\\')"

# Nothing else: three new folders, three files one line longer.
d=$(diff -r lib "$tmp/lib")
[ "$(echo "$d" | grep -c '^Only in')" = 3 ] || fail "not three new folders: $d"
[ "$(echo "$d" | grep -c '^> ')" = 3 ] && [ "$(echo "$d" | grep -c '^< ')" = 0 ] ||
	fail "not one added line per registry: $d"

nice -n 19 make -s -C "$tmp" -j2 lib > "$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; fail "the library with the dummies did not build"; }
tools/check-layers.sh "$tmp" || fail "the dummies break the layers"
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -I"$tmp/include" -I"$tmp/build/include" \
	-o "$tmp/smoke" tests/extend/smoke.c -L"$tmp/build/lib" -lzcrecv \
	-Wl,-rpath,"$tmp/build/lib" || fail "smoke.c did not build"
ZCRECV_BACKEND=dummy ZCRECV_PREDICTOR=dummy timeout 30 "$tmp/smoke" ||
	fail "the smoke test failed"
echo "extend check: a dummy transport, backend and predictor, one folder and one line each, build and pass"
