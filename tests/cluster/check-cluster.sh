#!/bin/bash
# check-cluster.sh - the emulated cluster (tools/cluster/zccluster) works
# and leaves nothing behind:
#   - two nodes have their own host names and reach each other over TCP;
#   - Open MPI's mpirun and MPICH's hydra start a rank on each node;
#   - libzcrecv-mpi ranks on two nodes talk TCP, on one node shm, under
#     both MPIs (the ZCRECV_REPORT=1 lines);
#   - nothing is left (namespaces, mounts, processes, /dev/shm entries,
#     Open MPI session directories) after 'down', after a 'run' stopped
#     with SIGTERM mid-job, and after a 'run' killed with SIGKILL and a
#     'down'; 'down' of nothing succeeds, a second 'up' fails.
# It uses the prefix zct only (a cluster of that name left by a killed run
# of this test is removed first) and removes it on every exit path.
# Prints "ok N - ..." / "not ok N - ..." lines, then "N passed, N failed,
# N skipped"; exits 1 on any failure. Needs root; a check whose tools are
# missing (MPICH, the build) is skipped with the reason.
#
# Usage: tests/cluster/check-cluster.sh   (as root, after make; no arguments)
set -uo pipefail
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
case ${1:-} in
-h|--help) usage; exit 0 ;;
'') ;;
*) usage >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
Z=$root/tools/cluster/zccluster
P=zct
export ZCCLUSTER_PREFIX=$P	# mpirun and mpiexec start on this cluster's node 1
bin=$root/build/tools/mpi
n=0 pass=0 failed=0 skipped=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n - $*"; }
bad() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n - # SKIP $*"; }
check() {	# check WHAT CMD...: ok when CMD succeeds
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
	echo "$pass passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit
}

if [ "$(id -u)" -ne 0 ]; then
	echo "# not root: the cluster needs namespaces and mounts"
	skip "every check: not root"
	finish
fi
for c in ip nsenter unshare perl; do
	command -v "$c" >/dev/null || {
		echo "# $c missing"
		skip "every check: $c missing (tools/deps.sh)"
		finish
	}
done

tmp=$(mktemp -d)
run_pid=""
cleanup() {
	[ -z "$run_pid" ] || kill -KILL "$run_pid" 2>/dev/null
	"$Z" down --prefix "$P" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
"$Z" down --prefix "$P" >/dev/null 2>&1

tag=3607$$	# marks this run's long jobs: sleep $tag
# nothing_left WHAT: no namespace, mount, process, /dev/shm entry or
# session directory of the cluster is left. The nodes' /dev/shm is a tmpfs
# of the cluster's own: no process may still see it (a process in a mount
# namespace that holds it), and nothing named after a node may be in the
# host's.
nothing_left() {
	local what=$1 left=""
	ip netns list | grep -Eq "^$P([0-9]+|-br)( |$)" && left+=" netns:$(ip netns list | grep -E "^$P([0-9]+|-br)( |$)" | cut -d' ' -f1 | tr '\n' ,)"
	findmnt -rn -o TARGET | grep -Eq "^/run/netns/$P([0-9]+|-br)$|^/run/zccluster/$P(/|$)" && left+=" mounts"
	[ ! -e "/run/zccluster/$P" ] || left+=" /run/zccluster/$P"
	pgrep -f "sleep $tag" >/dev/null && left+=" processes:$(pgrep -f "sleep $tag" | tr '\n' ,)"
	grep -qs "zccluster-$P " /proc/[0-9]*/mountinfo &&
		left+=" the nodes' /dev/shm (seen by $(grep -ls "zccluster-$P " /proc/[0-9]*/mountinfo | cut -d/ -f3 | tr '\n' ,))"
	find /dev/shm -mindepth 1 -maxdepth 1 -name "*${P}[0-9]*" > "$tmp/shm.left"
	[ ! -s "$tmp/shm.left" ] || left+=" /dev/shm:$(tr '\n' , < "$tmp/shm.left")"
	compgen -G "${TMPDIR:-/tmp}/ompi.${P}[0-9]*" >/dev/null && left+=" ompi-session-dirs"
	if [ -z "$left" ]; then
		ok "nothing left after $what"
	else
		bad "nothing left after $what: left$left"
	fi
}
# wait_for CMD...: up to 15 s for CMD to succeed
wait_for() {
	local _
	for _ in $(seq 1 150); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# ---- 1: up, host names, reachability
if "$Z" up --nodes 2 --prefix "$P" > "$tmp/up.out" 2>&1; then
	ok "zccluster up --nodes 2 --prefix $P"
else
	bad "zccluster up --nodes 2 --prefix $P: $(tail -n 1 "$tmp/up.out")"
	finish
fi
h1=$("$Z" exec ${P}1 cat /proc/sys/kernel/hostname 2>&1)
h2=$("$Z" exec ${P}2 uname -n 2>&1)
check "each node has its own host name ($h1, $h2)" [ "$h1,$h2" = "${P}1,${P}2" ]
# reach FROM TO: a TCP connection from FROM to TO's name; TO's listener
# prints the address the connection came from.
reach() {
	local from=$1 to=$2 out
	"$Z" exec "$to" timeout 10 perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(LocalPort => 7077, Listen => 1, ReuseAddr => 1) or die "$!";
		my $c = $s->accept; print $c->peerhost, "\n"' > "$tmp/reach" 2>&1 &
	local lp=$!
	wait_for "$Z" exec "$to" sh -c 'grep -q ":1BA5 " /proc/net/tcp' ||
		{ kill "$lp" 2>/dev/null; return 1; }
	"$Z" exec "$from" timeout 10 bash -c "exec 3<>/dev/tcp/$to/7077" || { kill "$lp" 2>/dev/null; return 1; }
	wait "$lp"
	out=$(cat "$tmp/reach")
	[ "$out" = "$(sed -n "s/^\([0-9.]*\)[[:space:]]*$from\$/\1/p" "/run/zccluster/$P/hosts")" ]
}
check "${P}1 reaches ${P}2 by name, and back, over TCP from their own addresses" \
	eval 'reach ${P}1 ${P}2 && reach ${P}2 ${P}1'

# ---- 2: the launchers
if command -v mpirun.openmpi >/dev/null; then
	out=$(timeout 30 "$Z" mpirun --host ${P}1:1,${P}2:1 -np 2 hostname </dev/null 2>&1 | sort | tr '\n' ' ')
	check "Open MPI: mpirun --host ${P}1:1,${P}2:1 -np 2 hostname prints ${P}1 ${P}2 ($out)" \
		[ "$out" = "${P}1 ${P}2 " ]
else
	skip "Open MPI: mpirun.openmpi missing (apt-get install openmpi-bin)"
fi
if command -v mpiexec.hydra >/dev/null || command -v mpiexec.mpich >/dev/null; then
	out=$(timeout 30 "$Z" mpiexec -hosts ${P}1,${P}2 -n 2 hostname </dev/null 2>&1 | sort | tr '\n' ' ')
	check "MPICH: mpiexec -hosts ${P}1,${P}2 -n 2 hostname prints ${P}1 ${P}2 ($out)" \
		[ "$out" = "${P}1 ${P}2 " ]
else
	skip "MPICH: mpiexec.hydra missing (apt-get install mpich)"
fi

# ---- 3: libzcrecv-mpi between nodes (TCP) and within one (shm)
# Where Yama forbids reading another process's memory outright (ptrace_scope
# 2 or 3) ranks of one node stay on TCP (Documentation/shm.md).
one_node="1 shm 0 tcp"
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -ge 2 ]; then
	one_node="[01] shm [01] tcp"
	echo "# Yama ptrace_scope >= 2: ranks of one node may use TCP"
fi
# peers WANT OUTPUT-FILE: both ranks' report lines say WANT
peers() {
	[ "$(grep -c '^zcrecv-mpi: rank [01]: .*, peers ' "$2")" -eq 2 ] &&
		[ "$(grep -c "^zcrecv-mpi: rank [01]: .*, peers $1," "$2")" -eq 2 ]
}
zc_case() {	# zc_case MPI LIB PROG WHERE WANT LAUNCH-ARGS...
	local mpi=$1 lib=$2 prog=$3 where=$4 want=$5
	shift 5
	if [ ! -x "$bin/$prog" ] || [ ! -f "$bin/$lib" ]; then
		skip "$mpi libzcrecv-mpi $where: build/tools/mpi/$lib or $prog not built (make)"
		return
	fi
	# The report lines come at MPI_Finalize; a job that hangs after them
	# (MPICH was seen to, in its own finalize, on a busy host) is noted.
	timeout 30 "$Z" "$@" </dev/null > "$tmp/zc.out" 2>&1
	[ $? -ne 124 ] || echo "# $mpi $where: the job was stopped after 30 s"
	if peers "$want" "$tmp/zc.out"; then
		ok "$mpi libzcrecv-mpi $where: both ranks report peers $want"
	else
		bad "$mpi libzcrecv-mpi $where: want peers $want; got: $(grep 'peers\|rror' "$tmp/zc.out" | head -n 3 | tr '\n' ' ')"
	fi
}
if command -v mpirun.openmpi >/dev/null; then
	for where in "two nodes" "one node"; do
		if [ "$where" = "two nodes" ]; then hosts=${P}1:1,${P}2:1 want="0 shm 1 tcp"; else hosts=${P}1:2 want=$one_node; fi
		zc_case "Open MPI" libzcrecv-mpi.so poisson "$where" "$want" \
			mpirun --host "$hosts" -np 2 -x ZCRECV_REPORT=1 \
			-x LD_PRELOAD="$bin/libzcrecv-mpi.so" "$bin/poisson"
	done
else
	skip "Open MPI libzcrecv-mpi two nodes: mpirun.openmpi missing"
	skip "Open MPI libzcrecv-mpi one node: mpirun.openmpi missing"
fi
if command -v mpiexec.hydra >/dev/null || command -v mpiexec.mpich >/dev/null; then
	for where in "two nodes" "one node"; do
		if [ "$where" = "two nodes" ]; then hosts=${P}1,${P}2 want="0 shm 1 tcp"; else hosts=${P}1:2 want=$one_node; fi
		zc_case MPICH libzcrecv-mpi-mpich.so poisson-mpich "$where" "$want" \
			mpiexec -hosts "$hosts" -n 2 -genv ZCRECV_REPORT 1 \
			-genv LD_PRELOAD "$bin/libzcrecv-mpi-mpich.so" "$bin/poisson-mpich"
	done
else
	skip "MPICH libzcrecv-mpi two nodes: mpiexec.hydra missing"
	skip "MPICH libzcrecv-mpi one node: mpiexec.hydra missing"
fi

# ---- 5: cleanup
if "$Z" up --nodes 2 --prefix "$P" > "$tmp/up2.out" 2>&1; then
	bad "a second up of $P fails while it is up"
else
	check "a second up of $P fails while it is up, and says why" grep -q "is up" "$tmp/up2.out"
fi
# A job that stays: one rank on each node, sleeping.
if command -v mpirun.openmpi >/dev/null; then
	job=(mpirun --host "${P}1:1,${P}2:1" -np 2 sleep "$tag")
else
	job=(exec "${P}2" sleep "$tag")
fi
"$Z" "${job[@]}" </dev/null >/dev/null 2>&1 &
wait_for eval '[ "$(pgrep -fc "^sleep $tag")" -ge 1 ]'
"$Z" down --prefix "$P" > "$tmp/down.out" 2>&1
check "down --prefix $P with a job running exits 0" [ $? -eq 0 ]
wait
nothing_left "down"
check "down of a cluster that is not there exits 0" "$Z" down --prefix "$P"

# run, stopped with SIGTERM mid-job (its command's job on both nodes).
"$Z" run --prefix "$P" -- "$Z" "${job[@]}" </dev/null >/dev/null 2>&1 &
run_pid=$!
if wait_for eval '[ "$(pgrep -fc "^sleep $tag")" -ge 2 ] || { [ "${job[0]}" = exec ] && pgrep -f "^sleep $tag" >/dev/null; }'; then
	kill -TERM "$run_pid"
	wait "$run_pid"
	rc=$?
	run_pid=""
	check "run stopped by SIGTERM mid-job exits 143 ($rc)" [ "$rc" -eq 143 ]
	nothing_left "a run stopped by SIGTERM"
else
	bad "run: the job did not start"
	kill -KILL "$run_pid" 2>/dev/null
	run_pid=""
fi

# run, killed with SIGKILL: the remains stay until down.
"$Z" run --prefix "$P" -- "$Z" "${job[@]}" </dev/null >/dev/null 2>&1 &
run_pid=$!
if wait_for eval '[ "$(pgrep -fc "^sleep $tag")" -ge 2 ] || { [ "${job[0]}" = exec ] && pgrep -f "^sleep $tag" >/dev/null; }'; then
	kill -KILL "$run_pid"
	wait "$run_pid" 2>/dev/null
	run_pid=""
	"$Z" status --prefix "$P" > "$tmp/status" 2>&1
	check "status calls the cluster of a killed run stale" grep -q "stale" "$tmp/status"
	"$Z" down --prefix "$P" >/dev/null 2>&1
	nothing_left "a run killed by SIGKILL, then down"
else
	bad "run: the job did not start"
	kill -KILL "$run_pid" 2>/dev/null
	run_pid=""
fi
finish
