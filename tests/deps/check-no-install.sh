#!/bin/bash
# check-no-install.sh - only `make test`, `make run` and friends install
# packages; `make`, `make lib`, `make progs` and `make install` never run
# tools/deps.sh, apt or sudo.
#
# In a scratch copy of the tree, tools/deps.sh is replaced by a stub that
# logs its calls, and apt-get, apt, apt-cache, dpkg and sudo on PATH by
# fakes that log and fail. Then `make lib` builds for real and the other
# goals are read and dry-run (make -n): the stub and the fakes must stay
# silent. `make -n test-unit` must call the stub, which shows the check
# sees a call when there is one. KBUILD_DIRS= keeps make -n from running
# kbuild (make runs lines that call $(MAKE) even under -n); which goals
# install does not depend on it.
#
# Usage: tests/deps/check-no-install.sh   (no arguments; make test runs it)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/calls.log
: > "$log"
fail=0
bad() { echo "deps check: $*"; fail=1; }

mkdir -p "$tmp/src" "$tmp/bin"
tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp/src" -xf - ||
	{ echo "deps check: cannot copy the tree"; exit 1; }
printf '#!/bin/sh\necho "tools/deps.sh $*" >> "%s"\nexit 0\n' "$log" > "$tmp/src/tools/deps.sh"
for p in apt-get apt apt-cache dpkg sudo; do
	printf '#!/bin/sh\necho "%s $*" >> "%s"\necho "FAKE %s CALLED" >&2\nexit 1\n' \
		"$p" "$log" "$p" > "$tmp/bin/$p"
done
chmod +x "$tmp/src/tools/deps.sh" "$tmp/bin/"*

# A clean environment for make: nothing from a parent make, deps not skipped.
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u ZCRECV_NO_DEPS \
		PATH="$tmp/bin:$PATH" make -C "$tmp/src" --no-print-directory "$@"
}

mk -s -j2 lib > "$tmp/lib.out" 2>&1 || { bad "make lib failed:"; tail -n 5 "$tmp/lib.out"; }
for goal in "" all lib progs modules install; do
	mk -n KBUILD_DIRS= $goal > "$tmp/n.out" 2>&1 ||
		{ bad "make -n $goal failed:"; tail -n 5 "$tmp/n.out"; }
done
if [ -s "$log" ]; then
	bad "plain make, lib, progs, modules or install called:"
	sed 's/^/    /' "$log"
fi

: > "$log"
mk -n KBUILD_DIRS= test-unit > "$tmp/n.out" 2>&1
grep -q '^tools/deps.sh' "$log" || bad "make -n test-unit did not call tools/deps.sh"

[ "$fail" -eq 0 ] && echo "deps check: make, lib, progs, modules, install install nothing; test-unit runs tools/deps.sh"
exit $fail
