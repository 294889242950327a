#!/bin/bash
# zcapps.sh - the application bench behind `make apps`: MPI programs run
# side by side under stock Open MPI, stock MPICH and over libzcrecv-mpi,
# on one node and across an emulated two-node cluster.
#
# Usage: tools/zcapps.sh [OPTIONS] [-- PROGRAM-OPTIONS]
#   --apps LIST     programs of build/tools/apps (default: all that
#                   tools/apps.mk builds: pes,m3,nbody,ft,is,ovft,ovspmv;
#                   the last two, the overlap probes, run p2p only)
#   --stacks LIST   what carries the messages (default
#                   ompi,ompi-again,mpich,zc-copy,zc-remap,zc-auto):
#                     ompi      stock Open MPI (mpirun)
#                     ompi-again  stock Open MPI once more in every trial:
#                               its ratio to ompi is this host's noise, the
#                               yardstick of every other ratio
#                     mpich     stock MPICH (hydra)
#                     zc-POLICY Open MPI with libzcrecv-mpi.so, ZCRECV_POLICY
#                               copy, remap or auto
#                     zc-mpich  MPICH with libzcrecv-mpi-mpich.so (auto)
#                     zc-pf     zc-auto with message prefetching
#                               (ZCRECV_PREFETCH=1)
#                     zc-nice   zc-auto with the progress thread at nice
#                               19 (ZCRECV_PROGRESS_NICE=19)
#   --configs LIST  where the two ranks run (default node,2n-1g,2n-10g):
#                     node      both on this host (shm between them)
#                     2n        one on each of two emulated nodes, unshaped
#                     2n-RATE   the same, each node's link shaped to RATE
#                               (1g, 10g, 500m: tbf, tools/cluster/zccluster)
#   --comm MODE     p2p, coll, persist (p2p with persistent requests),
#                   both (p2p and coll) or all: passed to every program
#                   (default p2p)
#   --post MODE     late, early or both (default late; p2p and persist)
#   --trials N      alternating trials of every stack (default 3)
#   --quick         the short version `make run` shows: node only, stacks
#                   ompi and zc-auto, 3 trials
#   --timeout S     seconds one run may take (default 120)
#   --grace S       a job that printed its result and then does not exit
#                   is stopped after S seconds (default 20) and kept,
#                   noted hung-at-exit: its timings were complete
#   --out DIR       results directory (default build/apps)
#   --no-png        no plot
#   --dry-run       print the runs, run nothing
#   -h, --help      this text
#   PROGRAM-OPTIONS go to every program (e.g. -- --iters 20)
#   ZCAPPS_BIN      where the programs are (default build/tools/apps)
#   ZCAPPS_ZC_ENV   NAME=VALUE words added to the environment of the
#                   zcrecv stacks' ranks (e.g. ZCRECV_DEFER_MIN=0)
#   ZCAPPS_PREFIX   node name prefix of the emulated cluster (default
#                   zca; 1 to 8 lower-case letters): two runs at once on
#                   one host need two prefixes, else each takes the
#                   other's nodes down and up again at its own rate
#
# Writes DIR/runs.csv (one row per run: times, the program's digest and the
# zcrecv layer's counters summed over ranks, the collectives it carried
# last), DIR/summary.csv and DIR/summary.txt (per configuration, program
# and stack: median wall time, spread, ratio to stock Open MPI with the
# range of the per-trial ratios, and for every program zcrecv runs more
# than 2% slower, the timings and counters that say why), DIR/apps.png
# and DIR/logs/. Exits 1 when a run
# fails, a program's check fails or the digests of one program disagree
# anywhere. Documentation/apps.md says what each program does.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
die() { echo "zcapps: $*" >&2; exit 2; }
# Stack commands, the checks, the cluster, running and reading a run:
# shared with tools/zcoverlap.sh.
. "$root/tools/apps/stacks.bash"

# The programs: those tools/apps.mk builds (APPS_NAMES), so a new program
# is one source file and one name there.
known_apps=$(sed -n 's/^APPS_NAMES *:= *//p' "$root/tools/apps.mk")
p2p_only=$(sed -n 's/^APPS_P2P_ONLY *:= *//p' "$root/tools/apps.mk")
apps=$(tr -s ' ' , <<< "$known_apps")
stacks=ompi,ompi-again,mpich,zc-copy,zc-remap,zc-auto
configs=node,2n-1g,2n-10g
comm=p2p post=late trials=3 timeout=120 grace=20 out=$root/build/apps png=1 dry=0
prog_args=()
# An option that takes a value must have one.
val() { [ $# -ge 2 ] || { echo "zcapps: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
	case $1 in
	--apps) val "$@"; apps=$2; shift ;;
	--stacks) val "$@"; stacks=$2; shift ;;
	--configs) val "$@"; configs=$2; shift ;;
	--comm) val "$@"; comm=$2; shift ;;
	--post) val "$@"; post=$2; shift ;;
	--trials) val "$@"; trials=$2; shift ;;
	--timeout) val "$@"; timeout=$2; shift ;;
	--grace) val "$@"; grace=$2; shift ;;
	--out) val "$@"; out=$2; shift ;;
	--quick) configs=node stacks=ompi,zc-auto trials=3 ;;
	--no-png) png=0 ;;
	--dry-run) dry=1 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; prog_args=("$@"); break ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

bin=${ZCAPPS_BIN:-$root/build/tools/apps}
zc_env=${ZCAPPS_ZC_ENV:-}
for kv in $zc_env; do
	case $kv in [A-Za-z_]*=*) ;; *) die "ZCAPPS_ZC_ENV: $kv is not NAME=VALUE" ;; esac
done
mpi=$root/build/tools/mpi
cluster=$root/tools/cluster/zccluster
prefix=${ZCAPPS_PREFIX:-zca}
[[ $prefix =~ ^[a-z]{1,8}$ ]] ||
	die "ZCAPPS_PREFIX: '$prefix' is not 1 to 8 lower-case letters"
# The cluster commands find their nodes by this (zccluster(1)).
export ZCCLUSTER_PREFIX=$prefix
case $comm in p2p|coll|persist) comms=$comm ;; both) comms="p2p coll" ;;
all) comms="p2p coll persist" ;;
*) die "--comm $comm: p2p, coll, persist, both or all" ;; esac
case $post in late|early) posts=$post ;; both) posts="late early" ;;
*) die "--post $post: late, early or both" ;; esac
IFS=, read -ra APPS <<< "$apps"
IFS=, read -ra STACKS <<< "$stacks"
IFS=, read -ra CONFIGS <<< "$configs"
for a in "${APPS[@]}"; do
	[[ " $known_apps " == *" $a "* ]] ||
		die "--apps: unknown program '$a' (${known_apps// /, })"
done
has_ompi=0
for s in "${STACKS[@]}"; do
	case $s in
	ompi) has_ompi=1 ;;
	ompi-again|mpich|zc-copy|zc-remap|zc-auto|zc-mpich|zc-pf|zc-nice) ;;
	*) die "--stacks: unknown stack '$s' (ompi, ompi-again, mpich, zc-copy, zc-remap, zc-auto, zc-mpich, zc-pf, zc-nice)" ;;
	esac
done
check_options

# What each stack needs, checked before anything runs.
[ "$dry" = 1 ] || check_needs

runs=$out/runs.csv
# A dry run leaves an earlier run's results alone.
[ "$dry" = 1 ] || mkdir -p "$out/logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

header=config,app,comm,post,stack,trial,status,wall,comp,start,wait,bytes,msgs,check,digest,zc_recv,early,hits,remaps,pages,copied,coll_calls,coll_bytes,shm_peers,tcp_peers,layer_s,note,deferred,expected,coll_zc_calls,coll_zc_bytes,pf_asked,pf_presend,pf_saved,pf_wasted
[ "$dry" = 1 ] || echo "$header" > "$runs"

nstacks=${#STACKS[@]}
npost=$(wc -w <<< "$posts")
nmode=0	# (comm, post) pairs: coll runs late only
for cm in $comms; do
	if [ "$cm" = coll ]; then nmode=$((nmode + 1)); else nmode=$((nmode + npost)); fi
done
ncoll=0	# programs that take no coll runs
if [[ " $comms " == *" coll "* ]]; then
	for a in "${APPS[@]}"; do
		[[ " $p2p_only " == *" $a "* ]] && ncoll=$((ncoll + 1))
	done
fi
total=$(( ${#CONFIGS[@]} * trials * nstacks * (${#APPS[@]} * nmode - ncoll) ))
echo "zcapps: $total runs: configurations ${configs}; programs ${apps}; stacks ${stacks}; $trials trials; comm $comm, post $post${prog_args[*]:+; program options ${prog_args[*]}}"
[ "$has_ompi" = 1 ] || echo "zcapps: no ompi stack: no ratios to stock Open MPI"
started=$(date +%s)
failed=0 hung=0 n=0

run_one() {	# config app comm post stack trial
	local cfg=$1 app=$2 cm=$3 po=$4 stack=$5 t=$6 log line rc status
	local args=(--comm "$cm")
	[ "$cm" = coll ] || args+=(--post "$po")
	command_of "$stack" "$cfg" "$app" "${args[@]}" "${prog_args[@]}"
	n=$((n + 1))
	if [ "$dry" = 1 ]; then
		echo "[$n/$total] ${CMD[*]}"
		return
	fi
	log=$out/logs/$cfg-$app-$cm-$po-$stack-$t
	launch_and_wait "$log"
	rc=$?
	line=$(grep -m1 '^zcapp: ' "$log.out")
	run_status "$rc" "$line"
	status=$STATUS note=
	if [ "$HUNG" = 1 ]; then
		# Finished its work and printed it, then never exited.
		note=hung-at-exit
		hung=$((hung + 1))
		echo "zcapps: $cfg $app $cm $po $stack trial $t: the result came, then the job hung at exit for ${grace}s and was stopped (${CMD[*]})" >&2
	fi
	if [ "$status" != ok ]; then
		failed=$((failed + 1))
		echo "zcapps: $cfg $app $cm $po $stack trial $t: $status (${CMD[*]}); $log.err:" >&2
		tail -n 5 "$log.err" >&2
	fi
	local f=$log.err
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' \
		"$cfg" "$app" "$cm" "$po" "$stack" "$t" "$status" \
		"$(kv "$line" wall)" "$(kv "$line" comp)" "$(kv "$line" start)" \
		"$(kv "$line" wait)" "$(kv "$line" bytes)" "$(kv "$line" msgs)" \
		"$(kv "$line" check)" "$(kv "$line" digest)" \
		"$(zc_received "$f")" "$(sumr "$f" 'early')" \
		"$(sumr "$f" 'hits')" "$(sumr "$f" 'remaps')" "$(sumr "$f" 'pages')" \
		"$(sumr "$f" 'copied')" "$(sumr "$f" 'collectives')" \
		"$(sumr "$f" 'calls')" "$(sumr "$f" 'peers')" "$(sumr "$f" 'shm')" \
		"$(sed -n 's/.*in layer \([0-9.]*\) s.*/\1/p' "$f" | awk '{s += $1} END {printf "%.3f", s}')" \
		"$note" "$(sumr "$f" 'deferred')" "$(sumr "$f" 'expected')" \
		"$(sumr "$f" 'carried coll')" \
		"$(sed -n 's/.*carried coll [0-9]* (\([0-9]*\) B).*/\1/p' "$f" | awk '{s += $1} END {print s + 0}')" \
		"$(sumr "$f" 'prefetch asked')" "$(sumr "$f" 'pre-sent')" \
		"$(sumr "$f" 'saved')" "$(sumr "$f" 'wasted')" >> "$runs"
	printf '[%d/%d] %-7s %-5s %-4s %-5s %-8s trial %d: %s %ss\n' "$n" "$total" \
		"$cfg" "$app" "$cm" "$po" "$stack" "$t" "$status" "$(kv "$line" wall)"
}

for cfg in "${CONFIGS[@]}"; do
	if [ "$dry" = 0 ] && ! config_up "$cfg"; then
		echo "zcapps: cannot bring up the emulated cluster for $cfg" >&2
		exit 1
	fi
	for ((t = 1; t <= trials; t++)); do
		for app in "${APPS[@]}"; do
			for cm in $comms; do
				[ "$cm" = coll ] && [[ " $p2p_only " == *" $app "* ]] && continue
				pl=$posts
				[ "$cm" = coll ] && pl=late
				for po in $pl; do
					# Alternate: each trial starts one stack further on.
					for ((i = 0; i < nstacks; i++)); do
						s=${STACKS[$(( (i + t - 1) % nstacks ))]}
						run_one "$cfg" "$app" "$cm" "$po" "$s" "$t"
					done
				done
			done
		done
	done
	cleanup
done
[ "$dry" = 1 ] && exit 0
echo "zcapps: $n runs in $(( $(date +%s) - started )) s"
[ "$hung" = 0 ] || echo "zcapps: $hung runs hung at exit after their result (kept: their timings were complete)"

"$root/tools/zcapps-report.sh" "$runs" "$out" || failed=$((failed + 1))
if [ "$png" = 1 ]; then
	"$root/tools/zcapps-report.sh" --png "$out/summary.csv" "$out/apps.png" ||
		echo "zcapps: no plot (gnuplot missing or failed)" >&2
fi
[ "$failed" = 0 ] || { echo "zcapps: $failed failures" >&2; exit 1; }
