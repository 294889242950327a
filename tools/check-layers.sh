#!/bin/bash
# check-layers.sh - the dependency rule of lib/ (Documentation/design.md,
# "Layers"): a folder uses only itself and the folders below it,
#
#   core -> transport -> match -> staging -> remap -> base
#                              -> predict ------------> base
#        -> prefetch -> pagever ----------------------> base
#   (core and transport use prefetch; match bumps page versions)
#
# base (lists, clock, the objects, request completion, memory, the
# configuration, the registry convention) is the bottom layer and uses
# nothing of the others; nothing is exempt. Three checks:
#   1. #include "X/..." lines of lib/FOLDER/**: X must be allowed for FOLDER;
#   2. the __zcr_* symbols each object of build/lib/FOLDER/ leaves
#      undefined must be defined by an allowed folder. Calls through ops
#      pointers (the core driving a transport, the engine a backend) are
#      not seen here: they are how an upper layer drives a lower one;
#   3. the configuration (base/config.c) calls nothing of the library and
#      includes only its own header: the MPI layer builds it in alone.
# Prints every violation; exit 1 if any.
#
# Usage: tools/check-layers.sh [ROOT]   (after make: reads ROOT/build/lib;
#                                        ROOT: the tree, default this one)
#        tools/check-layers.sh --self-test
#   --self-test  plant an upward include and an upward call in a copy of
#                the tree (base calling the core) and check that both are
#                caught; then check this tree
set -uo pipefail
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
case ${1:-} in
-h|--help) usage; exit 0 ;;
--self-test)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	src=$(cd "$(dirname "$0")/.." && pwd)
	[ -d "$src/build/lib" ] || { echo "check-layers: run make first" >&2; exit 1; }
	cp -r "$src/lib" "$tmp/lib"
	(cd "$src" && find build/lib -name '*.o' -print0 |
		cpio -p0dm --quiet "$tmp") || exit 1
	# An include and a call of the progress engine (core) from the base.
	printf '#include "core/core.h"\nint __zcr_planted(void);\nint __zcr_planted(void)\n{\n\treturn __zcr_progress_locked(0, 0);\n}\n' \
		> "$tmp/lib/base/planted.c"
	${CC:-cc} -std=gnu11 -D_GNU_SOURCE -I"$tmp/lib" -I"$src/include" -I"$src/build/include" -I"$src/include/uapi" \
		-c -o "$tmp/build/lib/base/planted.o" "$tmp/lib/base/planted.c" || exit 1
	out=$("$self" "$tmp" 2>&1)
	rc=$?
	bad=0
	[ $rc = 1 ] || { echo "check-layers self-test: exit $rc on a planted violation, not 1"; bad=1; }
	echo "$out" | grep -q 'lib/base/planted.c includes "core/core.h"' ||
		{ echo "check-layers self-test: the planted include went unseen"; bad=1; }
	echo "$out" | grep -q 'base/planted.o calls __zcr_progress_locked (core)' ||
		{ echo "check-layers self-test: the planted call went unseen"; bad=1; }
	[ $bad = 0 ] || { echo "$out"; exit 1; }
	echo "check-layers self-test: a planted upward include and call are caught"
	"$self"
	exit
	;;
-*) usage >&2; exit 2 ;;
esac
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1

declare -A allow=(
	[core]="core transport match staging remap predict prefetch pagever base"
	[transport]="transport match staging remap predict prefetch pagever base"
	[prefetch]="prefetch pagever base"
	[pagever]="pagever base"
	[match]="match staging remap predict pagever base"
	[staging]="staging remap base"
	[remap]="remap base"
	[predict]="predict base"
	[base]="base"
)
bad=0

allowed() {	# folder target
	case " ${allow[$1]} " in *" $2 "*) return 0 ;; esac
	return 1
}

# 1. includes
while IFS= read -r f; do
	folder=${f#lib/}
	folder=${folder%%/*}
	[ -n "${allow[$folder]+x}" ] || continue
	while IFS= read -r inc; do
		tgt=${inc%%/*}
		[ "$tgt" = "$inc" ] && continue		# same-folder file
		[ -n "${allow[$tgt]+x}" ] || continue	# not a layer
		if ! allowed "$folder" "$tgt"; then
			echo "check-layers: $f includes \"$inc\": $folder may not use $tgt"
			bad=1
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find lib -name '*.[ch]' | sort)

# 2. symbols, of the objects of today's sources only (a build tree from an
# older layout may hold others)
objs() {
	local c o
	find lib -name '*.c' | sort | while IFS= read -r c; do
		o=build/${c%.c}.o
		[ -f "$o" ] && echo "$o"
	done
}
if [ -n "$(objs)" ]; then
	declare -A owner
	while read -r o; do
		folder=${o#build/lib/}
		folder=${folder%%/*}
		for s in $(nm --defined-only -g "$o" | awk '$3 ~ /^__zcr_/ {print $3}'); do
			owner[$s]=$folder
		done
	done < <(objs)
	while read -r o; do
		folder=${o#build/lib/}
		folder=${folder%%/*}
		[ -n "${allow[$folder]+x}" ] || continue
		for s in $(nm -u "$o" | awk '$2 ~ /^__zcr_/ {print $2}'); do
			tgt=${owner[$s]:-}
			[ -n "$tgt" ] || continue
			if ! allowed "$folder" "$tgt"; then
				echo "check-layers: ${o#build/} calls $s ($tgt): $folder may not use $tgt"
				bad=1
			fi
		done
	done < <(objs)
else
	echo "check-layers: no build/lib objects, symbol check skipped" >&2
	bad=1
fi
# 3. the configuration stands alone
if grep -v '^#include "base/config.h"' lib/base/config.c | grep -q '^#include "'; then
	echo "check-layers: lib/base/config.c includes a library header other than base/config.h"
	bad=1
fi
if [ -f build/lib/base/config.o ] &&
   nm -u build/lib/base/config.o | grep -q ' __zcr_'; then
	echo "check-layers: lib/base/config.c calls into the library:" \
		$(nm -u build/lib/base/config.o | awk '$2 ~ /^__zcr_/ {print $2}')
	bad=1
fi
[ $bad = 0 ] && echo "lib/ layers: includes and calls point downward only, base included"
exit $bad
