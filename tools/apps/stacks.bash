# stacks.bash - sourced by tools/zcapps.sh and tools/zcoverlap.sh: the
# command line of one run under a stack (stock Open MPI, stock MPICH, or
# either over libzcrecv-mpi) in a configuration (this host, or two
# emulated nodes), the checks of what the runs need, the emulated nodes
# (up, and down at exit), running a job with a timeout, and reading its
# result and status. Not a command. The caller sets: bin (the programs), mpi (the layer's
# libraries), cluster (zccluster), prefix (its node names), zc_env
# (NAME=VALUE words for the zcrecv stacks' ranks), timeout, grace, and
# pin (1: each rank is bound to one processor of its own by taskset, the
# launcher's binding off, so two busy ranks never share one; on the
# emulated nodes too, which share this host's processors).

# The command line of one run: stack $1, configuration $2, then the program.
command_of() {
	local stack=$1 cfg=$2 app=$3
	shift 3
	local prog=$bin/$app launch=() env=()
	case $stack in
	mpich|zc-mpich)
		prog=$bin/$app-mpich
		if [ "$cfg" = node ]; then
			launch=(mpiexec.mpich -n 2)
		else
			launch=("$cluster" mpiexec -- -hosts "${prefix}1,${prefix}2" -n 2)
		fi
		if [ "$stack" = zc-mpich ]; then
			env=(-genv LD_PRELOAD "$mpi/libzcrecv-mpi-mpich.so"
			     -genv ZCRECV_REPORT 1 -genv ZCRECV_POLICY auto)
			for kv in $zc_env; do env+=(-genv "${kv%%=*}" "${kv#*=}"); done
		fi
		;;
	*)
		if [ "$cfg" = node ]; then
			launch=(mpirun --bind-to none -np 2)
		else
			launch=("$cluster" mpirun -- --host "${prefix}1:1,${prefix}2:1" -np 2)
		fi
		case $stack in
		zc-pf)	# auto, with message prefetching
			env=(-x LD_PRELOAD="$mpi/libzcrecv-mpi.so" -x ZCRECV_REPORT=1
			     -x ZCRECV_POLICY=auto -x ZCRECV_PREFETCH=1)
			for kv in $zc_env; do env+=(-x "$kv"); done ;;
		zc-nice)	# auto, the progress thread at nice 19
			env=(-x LD_PRELOAD="$mpi/libzcrecv-mpi.so" -x ZCRECV_REPORT=1
			     -x ZCRECV_POLICY=auto -x ZCRECV_PROGRESS_NICE=19)
			for kv in $zc_env; do env+=(-x "$kv"); done ;;
		zc-*)
			env=(-x LD_PRELOAD="$mpi/libzcrecv-mpi.so" -x ZCRECV_REPORT=1
			     -x ZCRECV_POLICY="${stack#zc-}")
			for kv in $zc_env; do env+=(-x "$kv"); done ;;
		esac
		;;
	esac
	if [ "${pin:-0}" = 1 ] && [ "$cfg" = node ]; then
		# One application context per rank, each under taskset. Open
		# MPI's -x holds for its own context only, hydra's -genv for all.
		local ctx=("${launch[@]: -2:1}" 1)
		case $stack in mpich|zc-mpich) ;; *) ctx+=("${env[@]}"); env=() ;; esac
		CMD=("${launch[@]:0:${#launch[@]}-2}" "${env[@]}"
		     "${ctx[@]}" taskset -c 0 "$prog" "$@" :
		     "${ctx[@]}" taskset -c 1 "$prog" "$@")
	elif [ "${pin:-0}" = 1 ]; then
		# The emulated nodes share this host's processors: rank r on
		# processor r, by the rank its launcher gives it.
		CMD=("${launch[@]}" "${env[@]}" sh -c \
		     'exec taskset -c "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" "$0" "$@"' \
		     "$prog" "$@")
	else
		CMD=("${launch[@]}" "${env[@]}" "$prog" "$@")
	fi
}

# Runs CMD into $1.out and $1.err in a process group of its own; returns
# its exit status, 124 when it outlived --timeout, 125 when it printed its
# result line and then did not exit within $grace seconds (the MPIs can
# hang in MPI_Finalize across nodes when the host is busy: the work and
# its timings are done by then). A stopped job's group is killed.
launch_and_wait() {
	local log=$1 pid start now seen= rc
	setsid "${CMD[@]}" > "$log.out" 2> "$log.err" < /dev/null &
	pid=$!
	job=$pid
	start=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		now=$SECONDS
		if [ -z "$seen" ] && [ -s "$log.out" ] &&
		   grep -q "^zcapp: " "$log.out"; then
			seen=$now
		fi
		rc=
		if [ -n "$seen" ] && [ $((now - seen)) -ge "$grace" ]; then
			rc=125
		elif [ $((now - start)) -ge "$timeout" ]; then
			rc=124
		fi
		if [ -n "$rc" ]; then
			kill -TERM -- "-$pid" 2>/dev/null
			sleep 2
			kill -KILL -- "-$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			job=
			return "$rc"
		fi
		sleep 0.5
	done
	wait "$pid"
	rc=$?
	job=
	return "$rc"
}

# Key=value from the program's result line: kv LINE KEY.
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<< " $1"; }
# Sum of a number over the layer's report lines: sumr FILE REGEX-BEFORE.
sumr() { sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p" "$1" | awk '{s += $1} END {print s + 0}'; }
# Messages received over zcrecv, summed over the report lines in $1
# ("msgs S sent R received"; not "sent" alone: "pre-sent N B" ends the line).
zc_received() { sumr "$1" 'msgs [0-9]* sent'; }


# The checks of the options both drivers take: trials, timeout, grace
# and CONFIGS; die (the caller's) on a bad one.
check_options() {
	local num='^[1-9][0-9]*$' c
	[[ $trials =~ $num ]] || die "--trials $trials: a positive whole number"
	[[ $timeout =~ $num ]] || die "--timeout $timeout: a positive whole number of seconds"
	[[ $grace =~ $num ]] || die "--grace $grace: a positive whole number of seconds"
	for c in "${CONFIGS[@]}"; do
		case $c in
		node|2n) ;;
		2n-*) [[ ${c#2n-} =~ ^[1-9][0-9]*[mg]$ ]] ||
			die "--configs: '$c': a rate as 2n-1g, 2n-10g or 2n-500m" ;;
		*) die "--configs: unknown configuration '$c' (node, 2n, 2n-RATE)" ;;
		esac
	done
}

need() { [ -e "$1" ] || die "$1 is missing: $2"; }

# What the runs need, before any starts: each stack's launcher and layer,
# every program of APPS built for its MPI, and for two-node
# configurations root and the cluster tool.
check_needs() {
	local s a c
	for s in "${STACKS[@]}"; do
		case $s in
		mpich|zc-mpich) command -v mpiexec.mpich >/dev/null ||
			die "mpiexec.mpich not found: tools/deps.sh installs MPICH" ;;
		*) command -v mpirun >/dev/null ||
			die "mpirun not found: tools/deps.sh installs Open MPI" ;;
		esac
		case $s in
		zc-mpich) need "$mpi/libzcrecv-mpi-mpich.so" "run make" ;;
		zc-*) need "$mpi/libzcrecv-mpi.so" "run make" ;;
		esac
		for a in "${APPS[@]}"; do
			case $s in
			mpich|zc-mpich) need "$bin/$a-mpich" "run make (needs MPICH's mpicc.mpich)" ;;
			*) need "$bin/$a" "run make (needs Open MPI's mpicc)" ;;
			esac
		done
	done
	for c in "${CONFIGS[@]}"; do
		[ "$c" = node ] && continue
		[ "$(id -u)" = 0 ] || die "the $c configuration makes network namespaces: run as root"
		need "$cluster" "the emulated cluster tool"
	done
}

# The emulated nodes of a configuration: made by config_up (nothing for
# node; 1 when they cannot be made), taken down by cleanup, which the
# traps call at exit; cleanup also stops the job running then (an
# interrupted driver left it running, beside the next measurement).
cluster_up=0 job=
cleanup() {
	if [ -n "$job" ]; then
		kill -TERM -- "-$job" 2>/dev/null
		sleep 1
		kill -KILL -- "-$job" 2>/dev/null
		job=
	fi
	[ "$cluster_up" = 1 ] && "$cluster" down --prefix "$prefix" >/dev/null 2>&1
	cluster_up=0
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP
config_up() {
	local rate=()
	[ "$1" = node ] && return 0
	[ "$1" = 2n ] || rate=(--rate "${1#2n-}bit")
	"$cluster" down --prefix "$prefix" >/dev/null 2>&1
	"$cluster" up --nodes 2 --prefix "$prefix" "${rate[@]}" || return 1
	cluster_up=1
}

# STATUS of a run from launch_and_wait's code $1 and its result line $2:
# ok, timeout, exitN, noresult or badcheck; HUNG=1 when it printed a good
# result and then hung at exit (kept: its timings were complete).
run_status() {
	HUNG=0 STATUS=ok
	if [ "$1" = 125 ] && [ -n "$2" ] && [ "$(kv "$2" check)" = ok ]; then
		HUNG=1
	elif [ "$1" = 124 ] || [ "$1" = 125 ]; then
		STATUS=timeout
	elif [ "$1" != 0 ]; then
		STATUS=exit$1
	elif [ -z "$2" ]; then
		STATUS=noresult
	elif [ "$(kv "$2" check)" != ok ]; then
		STATUS=badcheck
	fi
}
