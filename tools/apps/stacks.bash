# stacks.bash - sourced by tools/zcapps.sh and tools/zcoverlap.sh: the
# command line of one run under a stack (stock Open MPI, stock MPICH, or
# either over libzcrecv-mpi) in a configuration (this host, or two
# emulated nodes), running it with a timeout, and reading its result.
# Not a command. The caller sets: bin (the programs), mpi (the layer's
# libraries), cluster (zccluster), prefix (its node names), zc_env
# (NAME=VALUE words for the zcrecv stacks' ranks), timeout, grace, and
# pin (1: on this host each rank is bound to one processor of its own by
# taskset, the launcher's binding off, so two busy ranks never share one).

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
		case $stack in zc-*)
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
	local log=$1 pid start now seen= first rc
	setsid "${CMD[@]}" > "$log.out" 2> "$log.err" < /dev/null &
	pid=$!
	start=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		now=$SECONDS
		if [ -z "$seen" ] && [ -s "$log.out" ] &&
		   IFS= read -r first < "$log.out" && [[ $first == zcapp:* ]]; then
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
			return "$rc"
		fi
		sleep 0.5
	done
	wait "$pid"
}

# Key=value from the program's result line: kv LINE KEY.
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<< " $1"; }
# Sum of a number over the layer's report lines: sumr FILE REGEX-BEFORE.
sumr() { sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p" "$1" | awk '{s += $1} END {print s + 0}'; }

