#!/bin/bash
# check-layers.sh - the dependency rule of lib/ (Documentation/design.md,
# "Layers"): a folder uses only itself and the folders below it,
#
#   core -> transport -> match -> staging -> remap
#                              -> predict
#
# plus the base every layer may use: core/list.h, core/ctx.h, core/mem.h
# (data: the context and its objects), core/config.h (the ZCRECV_*
# variables) and the request completion, memory and configuration
# functions they declare. Three checks:
#   1. #include "X/..." lines of lib/FOLDER/**: X must be allowed for FOLDER;
#   2. the __zcr_* symbols each object of build/lib/FOLDER/ leaves
#      undefined must be defined by an allowed folder. Calls through ops
#      pointers (the core driving a transport, the engine a backend) are
#      not seen here: they are how an upper layer drives a lower one;
#   3. the configuration (core/config.c) calls nothing of the library and
#      includes only its own header: the MPI layer builds it in alone.
# Prints every violation; exit 1 if any.
#
# Usage: tools/check-layers.sh   (no arguments, after make: reads build/lib)
set -uo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

declare -A allow=(
	[core]="core transport match staging remap predict"
	[transport]="transport match staging remap predict"
	[match]="match staging remap predict"
	[staging]="staging remap"
	[remap]="remap"
	[predict]="predict"
)
base_hdr=" core/list.h core/ctx.h core/mem.h core/config.h "
base_sym=" __zcr_req_complete_locked __zcr_zone_map __zcr_zone_huge __zcr_mem_in_zone __zcr_mem_zone_unit __zcr_mem_room __zcr_mem_thp __zcr_mem_thp_any __zcr_anon_map __zcr_env_vars __zcr_env_parse __zcr_env_get __zcr_env_load __zcr_env_bad __zcr_env_accepts __zcr_env_default __zcr_env_type_name __zcr_env_reader_name "
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
		case "$base_hdr" in *" $inc "*) continue ;; esac
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
		for s in $(nm -u "$o" | awk '$2 ~ /^__zcr_/ {print $2}'); do
			case "$base_sym" in *" $s "*) continue ;; esac
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
if grep -v '^#include "core/config.h"' lib/core/config.c | grep -q '^#include "'; then
	echo "check-layers: lib/core/config.c includes a library header other than core/config.h"
	bad=1
fi
if [ -f build/lib/core/config.o ] &&
   nm -u build/lib/core/config.o | grep -q ' __zcr_'; then
	echo "check-layers: lib/core/config.c calls into the library:" \
		$(nm -u build/lib/core/config.o | awk '$2 ~ /^__zcr_/ {print $2}')
	bad=1
fi
[ $bad = 0 ] && echo "lib/ layers: includes and calls point downward only"
exit $bad
