#!/bin/bash
# zccoll.sh - the collectives alone, in the style of the OSU and IMB
# collective latency tests: per collective and part size, the median time
# of a call under stock Open MPI, stock MPICH and over libzcrecv-mpi, side
# by side in one run, on one node and across the emulated two-node
# cluster. The program is tests/mpi/zcmpi_coll.c's "bench" (two ranks,
# 15 calls per size after a warm-up, the slowest rank's time, parts of
# 1 KiB to 4 MiB by factors of 4; bcast and the reductions: the whole
# message is ranks x part).
#
# Usage: tools/zccoll.sh [OPTIONS]
#   --colls LIST    collectives (default alltoall,allgather,bcast): any of
#                   alltoall allgather bcast allreduce reduce
#                   reduce_scatter_block gather scatter ialltoall
#                   iallgather ibcast iallreduce barrier scan
#   --stacks LIST   ompi, mpich, zc-copy, zc-remap, zc-auto, zc-mpich
#                   (default ompi,mpich,zc-auto; as tools/zcapps.sh)
#   --configs LIST  node, 2n, 2n-RATE (default node,2n-10g; as
#                   tools/zcapps.sh)
#   --carry MODE    all: every call of the zcrecv stacks goes over zcrecv
#                   whatever its size (the collectives' thresholds 0: the
#                   layer's algorithms against the MPIs'); default: the
#                   layer's thresholds, as a user gets it (below them the
#                   MPI runs the call) (default all)
#   --trials N      alternating trials of every stack (default 3)
#   --bind MODE     cpu: rank r on processor r (taskset); none (default cpu)
#   --timeout S     seconds one run may take (default 180)
#   --out DIR       results directory (default build/coll)
#   --no-png        no plot
#   --dry-run       print the runs, run nothing
#   -h, --help      this text
#   ZCAPPS_ZC_ENV   NAME=VALUE words added to the zcrecv stacks' ranks
#   ZCAPPS_PREFIX   node name prefix of the emulated cluster (default
#                   zcc; 1 to 8 lower-case letters): two runs at once on
#                   one host need two prefixes
#
# Writes DIR/runs.csv (config, stack, trial, collective, bytes, µs),
# DIR/summary.csv and DIR/summary.txt (per configuration, collective and
# size: each stack's median over the trials with its range, each stack's
# ratio to stock Open MPI, and each zcrecv stack's ratio to the faster
# stock MPI; per zcrecv stack the calls the layer carried and left to
# the MPI, from its report, also in DIR/carried.csv), DIR/coll.png (zcrecv's ratio to stock Open MPI against the
# part size) and DIR/logs/. Exits 1 when a run fails. Documentation/mpi.md,
# "Collectives", says what the layer carries and how.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
die() { echo "zccoll: $*" >&2; exit 2; }
. "$root/tools/apps/stacks.bash"

# The bench's collectives, in the order of its coll_names[].
ALL_COLLS=(alltoall allgather bcast allreduce reduce reduce_scatter_block
	   gather scatter ialltoall iallgather ibcast iallreduce barrier scan)

colls=alltoall,allgather,bcast stacks=ompi,mpich,zc-auto configs=node,2n-10g
carry=all trials=3 timeout=180 grace=20 out=$root/build/coll png=1 dry=0 pin=1
val() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case $1 in
	--colls) val "$@"; colls=$2; shift ;;
	--stacks) val "$@"; stacks=$2; shift ;;
	--configs) val "$@"; configs=$2; shift ;;
	--carry) val "$@"; carry=$2; shift ;;
	--trials) val "$@"; trials=$2; shift ;;
	--bind) val "$@"
		case $2 in cpu) pin=1 ;; none) pin=0 ;;
		*) die "--bind $2: cpu or none" ;; esac
		shift ;;
	--timeout) val "$@"; timeout=$2; shift ;;
	--out) val "$@"; out=$2; shift ;;
	--no-png) png=0 ;;
	--dry-run) dry=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
IFS=, read -r -a COLLS <<< "$colls"
IFS=, read -r -a STACKS <<< "$stacks"
IFS=, read -r -a CONFIGS <<< "$configs"
[ ${#COLLS[@]} -gt 0 ] || die "--colls: none given"
[ ${#STACKS[@]} -gt 0 ] || die "--stacks: none given"
[ ${#CONFIGS[@]} -gt 0 ] || die "--configs: none given"
check_options
case $carry in all|default) ;; *) die "--carry $carry: all or default" ;; esac
first=99 last=-1
for c in "${COLLS[@]}"; do
	idx=-1
	for i in "${!ALL_COLLS[@]}"; do
		[ "${ALL_COLLS[$i]}" = "$c" ] && idx=$i
	done
	[ $idx -ge 0 ] || die "--colls: unknown collective '$c' (${ALL_COLLS[*]})"
	[ $idx -lt $first ] && first=$idx
	[ $idx -gt $last ] && last=$idx
done
for s in "${STACKS[@]}"; do
	case $s in
	ompi|mpich|zc-copy|zc-remap|zc-auto|zc-mpich) ;;
	*) die "--stacks: unknown stack '$s' (ompi, mpich, zc-copy, zc-remap, zc-auto, zc-mpich)" ;;
	esac
done

bin=$root/build/tools/mpi
mpi=$root/build/tools/mpi
cluster=$root/tools/cluster/zccluster
prefix=${ZCAPPS_PREFIX:-zcc}
[[ $prefix =~ ^[a-z]{1,8}$ ]] ||
	die "ZCAPPS_PREFIX: '$prefix' is not 1 to 8 lower-case letters"
export ZCCLUSTER_PREFIX=$prefix
zc_env=${ZCAPPS_ZC_ENV:-}
if [ "$carry" = all ]; then
	for v in ALLTOALL ALLGATHER BCAST GATHER SCATTER REDUCE ALLREDUCE \
		 REDUCE_SCATTER SCAN; do
		zc_env+=" ZCRECV_MPI_COLL_${v}_MIN=0"
	done
	zc_env+=" ZCRECV_MPI_COLL_BARRIER=1"
fi
APPS=(zcmpi_coll)
[ "$dry" = 1 ] || check_needs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/logs" || die "cannot make $out"
runs=$out/runs.csv
carried=$out/carried.csv
if [ "$dry" = 0 ]; then
	echo "config,stack,trial,coll,bytes,us" > "$runs"
	echo "config,stack,trial,carried_calls,left_calls" > "$carried"
fi

fail=0 n=0 total=$(( ${#CONFIGS[@]} * trials * ${#STACKS[@]} ))
for cfg in "${CONFIGS[@]}"; do
	if [ "$dry" = 0 ] && ! config_up "$cfg"; then
		echo "zccoll: $cfg: the emulated nodes could not be made" >&2
		fail=1
		continue
	fi
	for t in $(seq 1 "$trials"); do
		# Each trial starts one stack further on.
		for k in "${!STACKS[@]}"; do
			s=${STACKS[$(( (k + t - 1) % ${#STACKS[@]} ))]}
			n=$((n + 1))
			command_of "$s" "$cfg" zcmpi_coll bench "$first" "$last"
			if [ "$dry" = 1 ]; then
				echo "$cfg $s trial $t: ${CMD[*]}"
				continue
			fi
			log=$out/logs/$cfg-$s-$t
			launch_and_wait "$log"
			rc=$?
			rows=$(grep -E '^[a-z_]+,[0-9]+,[0-9.]+$' "$log.out")
			if [ $rc != 0 ] || [ -z "$rows" ]; then
				printf '[%d/%d] %-7s %-9s trial %d: failed (rc %d): %s\n' \
					"$n" "$total" "$cfg" "$s" "$t" "$rc" "$log.err"
				fail=1
				continue
			fi
			sed "s/^/$cfg,$s,$t,/" <<< "$rows" >> "$runs"
			# The layer's own count of the calls it carried and
			# left to the MPI, summed over the ranks.
			case $s in zc-*)
				echo "$cfg,$s,$t,$(sumr "$log.err" 'carried coll'),$(sumr "$log.err" 'collectives')" >> "$carried" ;;
			esac
			printf '[%d/%d] %-7s %-9s trial %d: ok, %d rows\n' \
				"$n" "$total" "$cfg" "$s" "$t" "$(wc -l <<< "$rows")"
		done
	done
	cleanup
done
[ "$dry" = 1 ] && exit 0

# The tables: per (config, coll, bytes, stack) the median over the
# trials, then the ratios.
keep=" ${COLLS[*]} "
awk -F, -v keep="$keep" -v stacks="$stacks" \
    -v sum="$out/summary.csv" '
	function median(key,   n, i, j, t, v) {
		n = split(vals[key], v, " ")
		if (!n) return ""
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		lo[key] = v[1]; hi[key] = v[n]
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	NR == 1 { next }
	index(keep, " " $4 " ") {
		row = $1 "," $4 "," $5
		if (!(row in seen)) { seen[row] = 1; order[++nrow] = row }
		vals[row "," $2] = vals[row "," $2] " " $6
	}
	END {
		ns = split(stacks, st, ",")
		printf "config,coll,bytes" > sum
		for (i = 1; i <= ns; i++)
			printf ",%s_us,%s_min,%s_max,%s_vs_ompi", st[i], st[i], st[i], st[i] > sum
		printf ",zc_vs_faster_stock\n" > sum
		printf "%-7s %-12s %9s", "config", "coll", "bytes"
		for (i = 1; i <= ns; i++)
			printf " %22s", st[i] " us (vs ompi)"
		printf " %14s\n", "zc/best-stock"
		for (r = 1; r <= nrow; r++) {
			split(order[r], f, ",")
			for (i = 1; i <= ns; i++)
				m[i] = median(order[r] "," st[i])
			base = ""
			best = ""
			for (i = 1; i <= ns; i++) {
				if (st[i] == "ompi") base = m[i]
				if ((st[i] == "ompi" || st[i] == "mpich") && m[i] != "" &&
				    (best == "" || m[i] + 0 < best + 0)) best = m[i]
			}
			printf "%s,%s,%s", f[1], f[2], f[3] > sum
			printf "%-7s %-12s %9s", f[1], f[2], f[3]
			zcbest = ""
			for (i = 1; i <= ns; i++) {
				k = order[r] "," st[i]
				ratio = (m[i] != "" && base + 0 > 0) ? sprintf("%.3f", m[i] / base) : ""
				printf ",%s,%s,%s,%s", m[i], lo[k], hi[k], ratio > sum
				if (m[i] == "")
					printf " %22s", "-"
				else
					printf " %22s", sprintf("%.1f (%s)", m[i], ratio == "" ? "-" : ratio)
				if (st[i] ~ /^zc-/ && m[i] != "" && best + 0 > 0 &&
				    (zcbest == "" || m[i] / best < zcbest + 0))
					zcbest = sprintf("%.3f", m[i] / best)
			}
			printf ",%s\n", zcbest > sum
			printf " %14s\n", zcbest == "" ? "-" : zcbest
		}
	}' "$runs" > "$out/summary.txt"
{
	echo
	echo "Median µs per call over $trials trials (the slowest rank's); in"
	echo "brackets the ratio to stock Open MPI; zc/best-stock: the best zcrecv"
	echo "stack over the faster of stock Open MPI and MPICH (below 1: zcrecv"
	echo "faster). zcrecv stacks: --carry $carry. Runs: $runs."
	awk -F, 'NR > 1 { k = $1 " " $2; c[k] += $4; l[k] += $5; n[k]++ }
		END { for (k in n) printf "%s: %d collective calls carried by zcrecv and %d left to the MPI per run (summed over the ranks, mean of %d runs)\n", k, c[k] / n[k], l[k] / n[k], n[k] }' \
		"$carried" | sort
} >> "$out/summary.txt"
cat "$out/summary.txt"

if [ "$png" = 1 ] && command -v gnuplot >/dev/null; then
	plots=() dat=$out/coll.dat
	: > "$dat"
	idx=0
	for cfg in "${CONFIGS[@]}"; do
		for c in "${COLLS[@]}"; do
			col=$(head -1 "$out/summary.csv" | tr , '\n' | grep -n '^zc-.*_vs_ompi$' | head -1 | cut -d: -f1)
			[ -n "$col" ] || continue
			awk -F, -v cfg="$cfg" -v c="$c" -v col="$col" \
				'$1 == cfg && $2 == c && $col != "" { print $3, $col }' \
				"$out/summary.csv" >> "$dat"
			printf '\n\n' >> "$dat"
			plots+=("'$dat' index $idx with linespoints title '$cfg $c'")
			idx=$((idx + 1))
		done
	done
	if [ ${#plots[@]} -gt 0 ]; then
		gnuplot <<-EOF 2>/dev/null || echo "zccoll: gnuplot failed; no $out/coll.png" >&2
			set terminal png size 900,600
			set output '$out/coll.png'
			set logscale x 2
			set xlabel 'bytes per part'
			set ylabel 'zcrecv / stock Open MPI (time)'
			set key outside right
			set grid
			plot $(IFS=,; echo "${plots[*]}"), 1 with lines lt 0 title ''
		EOF
		echo "zccoll: $out/summary.csv, $out/summary.txt, $out/coll.png"
	fi
fi
exit $fail
