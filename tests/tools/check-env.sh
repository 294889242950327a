#!/bin/bash
# check-env.sh - the ZCRECV_* variables are declared in one place: the
# table of lib/base/config.c. Fails when the list in zcrecv(7) or in
# Documentation/configuration.md (the lines between their BEGIN and END
# markers) differs from what build/tools/zcinfo --env=man or
# --env=markdown prints from the table, when C code of lib/ or tools/
# reads a ZCRECV_* variable with getenv() instead of the table's parser,
# or names one the table does not declare, or when zcinfo --env does not
# flag a bad value.
#
# Usage: tests/tools/check-env.sh [--update]   (after make; make test runs it)
#   --update  write the table's lists into the two files instead
set -uo pipefail
update=0
case ${1:-} in
--update) update=1 ;;
-h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
?*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
zcinfo=build/tools/zcinfo
[ -x "$zcinfo" ] || { echo "env check: $zcinfo missing: run make first"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "env check: $*"; fail=1; }

# block FILE BEGIN END FORMAT: compare (or replace) the lines between the
# marker lines BEGIN and END of FILE with zcinfo --env=FORMAT.
block() {
	local f=$1 begin=$2 end=$3 fmt=$4
	"$zcinfo" --env="$fmt" > "$tmp/want" || { bad "zcinfo --env=$fmt failed"; return; }
	if [ "$(grep -cxF -- "$begin" "$f")" != 1 ] || [ "$(grep -cxF -- "$end" "$f")" != 1 ]; then
		bad "$f: no single \"$begin\" ... \"$end\" block"
		return
	fi
	# through the environment: awk -v would take the backslashes
	export B="$begin" E="$end" W="$tmp/want"
	awk '$0 == ENVIRON["E"] { on = 0 } on { print } $0 == ENVIRON["B"] { on = 1 }' \
		"$f" > "$tmp/have"
	if [ $update = 1 ]; then
		awk '$0 == ENVIRON["E"] { on = 0 }
			!on { print }
			$0 == ENVIRON["B"] {
				on = 1
				while ((getline l < ENVIRON["W"]) > 0) print l
			}' "$f" > "$tmp/new" && cat "$tmp/new" > "$f"
		echo "env check: $f written from the table"
	elif ! diff -u "$tmp/have" "$tmp/want" > "$tmp/diff"; then
		bad "$f differs from zcinfo --env=$fmt (the table; tests/tools/check-env.sh --update writes it):"
		sed 's/^/    /' "$tmp/diff"
	fi
}
block man/man7/zcrecv.7 '.\" BEGIN zcinfo --env=man' '.\" END zcinfo --env=man' man
block Documentation/configuration.md '<!-- BEGIN zcinfo env=markdown -->' \
	'<!-- END zcinfo env=markdown -->' markdown

# The table's names, as zcinfo lists them.
"$zcinfo" --env=markdown | sed -n 's/^| `\(ZCRECV_[A-Z_]*\)`.*/\1/p' | sort > "$tmp/names"
[ -s "$tmp/names" ] || bad "zcinfo --env=markdown lists no variable"

# Code reads the variables through the table only, and names no other.
mapfile -t srcs < <(find lib tools -name '*.[ch]' | sort)
grep -n 'getenv("ZCRECV_' "${srcs[@]}" | grep -v '^lib/core/config\.c:' > "$tmp/getenv"
if [ -s "$tmp/getenv" ]; then
	bad "getenv() of a ZCRECV_* variable outside lib/base/config.c (use __zcr_env_get()):"
	sed 's/^/    /' "$tmp/getenv"
fi
grep -on '"ZCRECV_[A-Z][A-Z_]*"' "${srcs[@]}" | sed 's/"//g' |
while IFS=: read -r file line name; do
	grep -qx -- "$name" "$tmp/names" ||
		echo "env check: $file:$line names $name, which lib/base/config.c does not declare"
done > "$tmp/undeclared"
[ ! -s "$tmp/undeclared" ] || { cat "$tmp/undeclared"; fail=1; }

# zcinfo --env says which value is bad, and exits 1.
ZCRECV_SHM_FRAG_MAX=abc "$zcinfo" --env > "$tmp/out"
rc=$?
[ $rc = 1 ] || bad "ZCRECV_SHM_FRAG_MAX=abc zcinfo --env: exit $rc, not 1"
grep -q '^ZCRECV_SHM_FRAG_MAX=abc .*bad' "$tmp/out" ||
	bad "ZCRECV_SHM_FRAG_MAX=abc zcinfo --env: the value is not flagged"
mapfile -t unset < <(env | sed -n 's/^\(ZCRECV_[A-Z_]*\)=.*/-u\n\1/p')
env "${unset[@]}" "$zcinfo" --env > /dev/null ||
	bad "zcinfo --env: exit status not 0 with no ZCRECV_* variable set"

[ $fail = 0 ] && [ $update = 0 ] &&
	echo "env check: $(wc -l < "$tmp/names") variables, zcrecv(7) and configuration.md match the table, no stray getenv"
exit $fail
