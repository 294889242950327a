#!/bin/bash
# check-apps.sh - the application programs of tools/apps (pes, m3, nbody,
# ft, is, and the overlap probes ovft and ovspmv; Documentation/apps.md)
# at small sizes, each run a few tenths of a second:
#   - with 2 ranks under stock Open MPI, stock MPICH, Open MPI over
#     libzcrecv-mpi.so (ZCRECV_POLICY=auto) and MPICH over
#     libzcrecv-mpi-mpich.so, in every --comm / --post combination the
#     program takes, and with --comm persist (persistent requests; late
#     under all four, early over Open MPI with the layer); ft also over
#     zcrecv with the copy and the remap
#     policy (point to point); each program once with --alloc malloc
#     over zcrecv;
#   - with 3 ranks (ft: 4) under Open MPI, stock (both --comm) and over
#     zcrecv (p2p), oversubscribed: Open MPI then yields while it waits;
#     MPICH, which would spin, only runs 2 ranks here;
#   - every run exits 0 and prints check=ok; over zcrecv every rank
#     prints its report line, and with --comm p2p and persist the layer carried
#     messages;
#   - the overlap probes in every version (ovft E, S, P, X:4; ovspmv B,
#     G, S) under the same four stacks with both --post modes, at
#     --scale 0 too, with persistent requests and --alloc malloc over
#     zcrecv, and with 3 ranks (Open MPI, stock and over zcrecv);
#   - ovloggp (the LogGP parameters of zcoverlap's models) under the same
#     four stacks with both --post modes and over zcrecv with copy and
#     remap: its table and csv lines for every size; 3 ranks refused;
#   - all runs of one program print the same digest: the digest depends
#     on neither the MPI, nor the comm and post modes, nor zcrecv, nor
#     the number of ranks (the probes: nor the version; their digest
#     does depend on the rank count and the scale, each its own group).
# Builds nothing (run make first). Prints "ok N - what" / "not ok N -
# what" per check, "# ..." lines with the zcrecv counters, and ends with
# "N passed, N failed"; exits 1 on any failure.
#
# Usage: tests/apps/check-apps.sh [-v]   (-v: the command of every run)
set -uo pipefail
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
verbose=0
case ${1:-} in
'') ;;
-v) verbose=1 ;;
-h|--help) usage; exit 0 ;;
*) echo "check-apps.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
bin=build/tools/apps
lib=$root/build/tools/mpi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0 fail=0 n=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }

# Small problems: a tenth of a second or so of work with 2 ranks.
declare -A args=(
	[pes]="--size 768 --iters 80"
	[m3]="--size 256 --iters 10"
	[nbody]="--size 1536 --iters 8"
	[ft]="--size 64 --iters 20"
	[is]="--size 2097152 --iters 10"
	[ovft]="--size 96 --len 1024 --iters 4"
	[ovspmv]="--size 196608 --nnz 8 --iters 4"
	[ovloggp]="--size 262144 --iters 1 --sizes 8,65536,262144"
)
# Ranks beyond 2: ft needs a power of 2.
declare -A more=([pes]=3 [m3]=3 [nbody]=3 [ft]=4 [is]=3)
# Combinations of --comm and --post each program takes.
modes_of() {
	case $1 in
	pes|m3) echo "p2p/late p2p/early coll/late coll/early" ;;
	*) echo "p2p/late p2p/early coll/late" ;;
	esac
}

have_ompi=0 have_mpich=0
command -v mpirun >/dev/null && [ -x $bin/pes ] && have_ompi=1
command -v mpiexec.mpich >/dev/null && [ -x $bin/pes-mpich ] && have_mpich=1
if [ $have_ompi = 0 ] && [ $have_mpich = 0 ]; then
	bad "no programs: build/tools/apps is empty or no MPI is installed (run make)"
	echo "$pass passed, $fail failed"
	exit 1
fi
[ $have_ompi = 1 ] || echo "# Open MPI or its build of the programs missing: its runs skipped"
[ $have_mpich = 1 ] || echo "# MPICH or its build of the programs missing: its runs skipped"

# run STACK NP APP COMM POST [extra args]: one run, checked; the digest
# goes to $tmp/GROUP.digests (GROUP: the program's name unless set).
group=
run() {
	local stack=$1 np=$2 app=$3 comm=$4 post=$5 cmd env=() rc line dig
	local zc=0 what lines carried counters size
	shift 5
	what="$app $stack P=$np $comm/$post${*:+ $*}"
	case $stack in
	ompi|zc-*)
		[ $have_ompi = 1 ] || return 0
		case $stack in zc-*)
			zc=1
			env=(-x LD_PRELOAD="$lib/libzcrecv-mpi.so" -x ZCRECV_REPORT=1
			     -x ZCRECV_POLICY="${stack#zc-}") ;;
		esac
		cmd=(mpirun --bind-to none --oversubscribe -np "$np" "${env[@]}"
		     "$bin/$app") ;;
	mpich|zcmpich)
		[ $have_mpich = 1 ] || return 0
		if [ "$stack" = zcmpich ]; then
			zc=1
			env=(-genv LD_PRELOAD "$lib/libzcrecv-mpi-mpich.so"
			     -genv ZCRECV_REPORT 1)
		fi
		cmd=(mpiexec.mpich -n "$np" "${env[@]}" "$bin/$app-mpich") ;;
	esac
	read -ra size <<< "${args[$app]}"
	cmd+=("${size[@]}" --comm "$comm" --post "$post" "$@")
	[ $verbose = 1 ] && echo "# ${cmd[*]}"
	timeout -k 5 60 "${cmd[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	line=$(grep -m1 '^zcapp: ' "$tmp/out")
	dig=$(grep -o ' digest=[0-9a-f]\{16\}' <<< "$line" | cut -d= -f2)
	lines=$(grep -c '^zcrecv-mpi: rank [0-9]*: msgs' "$tmp/err")
	carried=$(grep -o 'msgs [0-9]* sent' "$tmp/err" |
		awk '{s += $2} END {print s + 0}')
	if [ $rc != 0 ] || [[ $line != *" check=ok "* ]] || [ -z "$dig" ]; then
		bad "$what: exit $rc, ${line:-no result line}"
		grep -v '^zcrecv-mpi:' "$tmp/err" | tail -n 5 | sed 's/^/# /'
		return
	fi
	if [ $zc = 1 ] && { [ "$lines" != "$np" ] ||
	   { [ "$comm" != coll ] && [ "$carried" = 0 ]; }; }; then
		bad "$what: $lines zcrecv report lines of $np, $carried messages carried"
		return
	fi
	echo "$dig $what" >> "$tmp/${group:-$app}.digests"
	ok "$what: check=ok digest=$dig"
	if [ $zc = 1 ]; then
		counters=$(sed -n 's/.*received, early \([0-9]*\), hits \([0-9]*\), remaps \([0-9]*\),.*/\1 \2 \3/p' \
			"$tmp/err" | awk '{e += $1; h += $2; r += $3}
			END {printf "early %d, hits %d, remaps %d", e, h, r}')
		echo "#   zcrecv: $carried messages, $counters"
	fi
}

# All digests of each group of one program agree.
agree() {	# agree APP
	local f runs digests
	for f in "$tmp/$1".digests "$tmp/$1".*.digests; do
		[ -s "$f" ] || continue
		runs=$(wc -l < "$f")
		digests=$(cut -d' ' -f1 "$f" | sort -u)
		if [ "$(wc -l <<< "$digests")" = 1 ]; then
			ok "$(basename "$f" .digests): the $runs runs agree on digest $digests"
		else
			bad "$(basename "$f" .digests): the $runs runs disagree on the digest:"
			sort "$f" | sed 's/^/#   /'
		fi
	done
}

start=$(date +%s)
for app in pes m3 nbody ft is; do
	rm -f "$tmp/$app".*digests
	group=
	for m in $(modes_of $app); do
		for stack in ompi mpich zc-auto zcmpich; do
			run $stack 2 $app "${m%/*}" "${m#*/}"
		done
	done
	if [ $app = ft ]; then
		for post in late early; do
			run zc-copy 2 $app p2p $post
			run zc-remap 2 $app p2p $post
		done
	fi
	# Persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start).
	for stack in ompi mpich zc-auto zcmpich; do
		run $stack 2 $app persist late
	done
	run zc-auto 2 $app persist early
	run zc-auto 2 $app p2p late --alloc malloc
	run ompi "${more[$app]}" $app p2p late
	run ompi "${more[$app]}" $app coll late
	run zc-auto "${more[$app]}" $app p2p late
	agree $app
done
# The overlap probes: every version, both disciplines, four stacks; the
# digest is the same for every version at one scale and rank count.
declare -A versions=([ovft]="E S P X:4" [ovspmv]="B G S")
for app in ovft ovspmv; do
	rm -f "$tmp/$app".*digests
	group=$app
	for v in ${versions[$app]}; do
		for post in late early; do
			for stack in ompi mpich zc-auto zcmpich; do
				run $stack 2 $app p2p $post --version "$v"
			done
		done
	done
	v=${versions[$app]##* }
	run zc-auto 2 $app persist late --version "$v"
	run zc-auto 2 $app p2p late --version "$v" --alloc malloc
	group=$app.scale0
	for v in ${versions[$app]}; do
		run ompi 2 $app p2p late --version "$v" --scale 0
		run zc-auto 2 $app p2p late --version "$v" --scale 0
	done
	group=$app.P3
	eta=()
	[ $app = ovspmv ] && eta=(--eta 2)
	for v in ${versions[$app]}; do
		run ompi 3 $app p2p late --version "$v" "${eta[@]}"
		run zc-auto 3 $app p2p early --version "$v" "${eta[@]}"
	done
	agree $app
done
# The LogGP probe: every message it received checked, a digest that
# depends on the sizes only; a table row and a csv line per size.
rm -f "$tmp"/ovloggp.*digests
group=ovloggp
for post in late early; do
	for stack in ompi mpich zc-auto zcmpich; do
		run $stack 2 ovloggp p2p $post
		[ -s "$tmp/out" ] || continue
		if [ "$(grep -c '^csv,[0-9]' "$tmp/out")" = 3 ] &&
		   grep -q '^ *65536 *4 ' "$tmp/out" &&
		   grep -q '^csv,262144,4,[0-9.e+-]*,[0-9.e+-]*,' "$tmp/out"; then
			ok "ovloggp $stack $post: a table row and a csv line per size"
		else
			bad "ovloggp $stack $post: table or csv lines missing"
			sed 's/^/#   /' "$tmp/out"
		fi
	done
done
run zc-copy 2 ovloggp p2p late
run zc-remap 2 ovloggp p2p late
agree ovloggp
if [ $have_ompi = 1 ]; then
	timeout -k 5 60 mpirun --bind-to none --oversubscribe -np 3 \
		$bin/ovloggp --size 65536 --iters 1 >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ $rc = 2 ] && grep -q 'ovloggp: 3 ranks: it measures a pair' "$tmp/err"; then
		ok "ovloggp with 3 ranks refused (exit 2)"
	else
		bad "ovloggp with 3 ranks: exit $rc"
	fi
fi
echo "# $(( $(date +%s) - start )) s"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
