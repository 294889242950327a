#!/bin/bash
# run-tests.sh - the test command behind `make test`.
#
# Usage: tools/run-tests.sh [--unit-only | --vm-only] [SERIES...]
#        tools/run-tests.sh -h|--help
#   SERIES  kernel series for the VM kselftests (default: 6.1 6.12)
#
# Runs the host unit tests (build/tests/unit/*), then, for each kernel, boots
# a VM with zcrecv.ko and runs every kselftest (build/tests/selftests/*) plus
# the unit tests named in tests/vm.list, then boots the generic 6.12
# kernel with soft-RoCE (rxe0) for the tests in tests/vm-rxe.list, and
# ends with one line
# "N passed, N failed[, N skipped]" over everything. Exit 1 on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=all
usage() { sed -n '2,13s/^# \{0,1\}//p' "$0"; }
case ${1:-} in
--unit-only) mode=unit; shift ;;
--vm-only) mode=vm; shift ;;
-h|--help) usage; exit 0 ;;
esac
for a in "$@"; do
	case $a in -*) usage >&2; exit 2 ;; esac
done
series=("$@")
[ ${#series[@]} -gt 0 ] || series=(6.1 6.12)

res=$root/build/results
rm -rf "$res"
mkdir -p "$res"
totals=$res/totals
: > "$totals"
status=0

# One host check = one result: NAME then the command.
host_check() {
	local name=$1
	shift
	echo "== $name"
	if "$@"; then
		echo "ok $name"
		echo "1 0 0" >> "$totals"
	else
		echo "not ok $name"
		echo "0 1 0" >> "$totals"
	fi
}

if [ "$mode" != vm ]; then
	host_check "checkpatch --strict on kmod/" make -s --no-print-directory checkpatch
	host_check "make install + pkg-config build" tests/install/check.sh
	host_check "uAPI layout for 64- and 32-bit callers" tests/abi/check-compat.sh
	host_check "0.1 and 0.2 binaries run with this libzcrecv.so" tests/abi/check-lib-abi.sh
	host_check "the version: VERSION, and every place made from it agrees" tests/abi/check-version.sh
	host_check "lib/ layers include and call only downward, a planted violation caught" tools/check-layers.sh --self-test
	host_check "a dummy transport, backend and predictor: one folder and one line each" tests/extend/check-extend.sh
	host_check "MPI tracer under Open MPI and MPICH" tests/mpi/check-tracer.sh
	host_check "manual pages: every call and tool, no man warning" tests/man/check.sh
	host_check "ZCRECV_* variables: one table, zcrecv(7) and configuration.md match it" tests/tools/check-env.sh
	host_check "--help and a bad option on every tool and script" tests/tools/check-help.sh
	host_check "zcbench and zcland-bench verify every message" tests/tools/check-bench.sh
	host_check "zcapps: report arithmetic, digests, option checks" tests/tools/check-zcapps.sh
	host_check "zcoverlap: H from the runs, digests, option checks, a tiny run" tests/tools/check-zcoverlap.sh
	host_check "zccoll: option checks, the dry run's commands, a tiny run" tests/tools/check-zccoll.sh
	host_check "emulated cluster: nodes, both launchers, tcp/shm choice, cleanup" tests/cluster/check-cluster.sh
	host_check "application programs: self-checks and digests, both MPIs, with and without zcrecv" tests/apps/check-apps.sh
	host_check "plain make, lib, install never install packages" tests/deps/check-no-install.sh
	host_check "receive-path tests under Thread-, Address- and UB-Sanitizer" tests/unit/check-sanitizers.sh
	# libzcrecv-mpi: each of its checks counts.
	echo "== libzcrecv-mpi under Open MPI and MPICH"
	tests/mpi/check-zcmpi.sh 2>&1 | tee "$res/zcmpi.log"
	echo "$(grep -c '^ok ' "$res/zcmpi.log") $(grep -c '^not ok ' "$res/zcmpi.log") $(grep -c '^skip ' "$res/zcmpi.log")" >> "$totals"
	grep -q '^libzcrecv-mpi: .* all passed' "$res/zcmpi.log" || echo "0 1 0" >> "$totals"
	echo "== host unit tests"
	for t in build/tests/unit/test_*; do
		[ -x "$t" ] || continue
		echo "# $t"
		"$t" 2>&1 | tee "$res/$(basename "$t").log"
		rc=${PIPESTATUS[0]}
		line=$(grep -E '^# Totals: pass:' "$res/$(basename "$t").log" | tail -n 1)
		if [ -z "$line" ]; then
			echo "run-tests: $t printed no totals (rc=$rc)"
			echo "0 1 0" >> "$totals"
		else
			echo "$line" | sed -E 's/.*pass:([0-9]+) fail:([0-9]+) skip:([0-9]+).*/\1 \2 \3/' >> "$totals"
			if [ "$rc" != 0 ] && ! echo "$line" | grep -q 'fail:[1-9]'; then
				echo "run-tests: $t exited $rc"
				echo "0 1 0" >> "$totals"
			fi
		fi
	done
fi

if [ "$mode" != unit ]; then
	files=() cmds=()
	for t in build/tests/selftests/*; do
		[ -x "$t" ] || continue
		files+=(-f "$t")
		cmds+=("./$(basename "$t")")
	done
	if [ -f tests/vm.list ]; then
		while read -r name; do
			case $name in ''|'#'*) continue ;; esac
			files+=(-f "build/tests/unit/$name")
			cmds+=("./$name")
		done < tests/vm.list
	fi
	for s in "${series[@]}"; do
		kver=$(tools/vm/kernels.sh "$s") || { echo "0 1 0" >> "$totals"; status=1; continue; }
		echo "== VM kselftests on Linux $kver"
		tools/vm/run-vm.sh -k "$kver" -o "$res/vm-$kver.log" \
			-r "$totals" "${files[@]}" -- "${cmds[@]}" || status=1
	done
	# The verbs tests on soft-RoCE: the generic 6.12 kernel with rxe0.
	if [ -f tests/vm-rxe.list ]; then
		files=() cmds=()
		while read -r name; do
			case $name in ''|'#'*) continue ;; esac
			files+=(-f "build/tests/unit/$name")
			cmds+=("./$name")
		done < tests/vm-rxe.list
		if kver=$(tools/vm/kernels.sh 6.12-rxe); then
			echo "== VM verbs tests on soft-RoCE, Linux $kver"
			tools/vm/run-vm.sh -k "$kver" -R -t 300 \
				-o "$res/vm-rxe-$kver.log" -r "$totals" \
				"${files[@]}" -- "${cmds[@]}" || status=1
		else
			echo "0 1 0" >> "$totals"
			status=1
		fi
	fi
fi

read -r pass fail skip < <(awk '{p += $1; f += $2; s += $3} END {print p + 0, f + 0, s + 0}' "$totals")
[ "$fail" -eq 0 ] || status=1
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
exit $status
