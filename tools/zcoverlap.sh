#!/bin/bash
# zcoverlap.sh - how much communication each stack hides behind
# computation: the overlap probes ovft and ovspmv (Documentation/apps.md)
# under stock Open MPI, stock MPICH and over libzcrecv-mpi, and the
# overlap achieved, H = (T_E - T_X) / min(T_comp, T_comm), per version.
#
# Usage: tools/zcoverlap.sh [OPTIONS] [-- PROGRAM-OPTIONS]
#        tools/zcoverlap.sh --report RUNS.CSV OUTDIR
#   --apps LIST      ovft, ovspmv (default both)
#   --versions LIST  overlapped versions X, each against the bulk one
#                    (ovft E, ovspmv B); a version a program lacks is
#                    skipped (default S,P,X:8,G)
#   --stacks LIST    ompi, mpich, zc-copy, zc-remap, zc-auto, zc-mpich
#                    (default ompi,zc-auto; as tools/zcapps.sh)
#   --configs LIST   node (default), 2n, 2n-RATE (as tools/zcapps.sh)
#   --scale LIST     the --scale of the runs with computation: S for
#                    every program or APP=S,... (default ovft=0.08,
#                    ovspmv=0.02: computation about equal to
#                    communication on a 2-core host)
#   --iters LIST     --iters of every run: K for every program or
#                    APP=K,... (default ovspmv=800: a second at its
#                    default scale; ovft its own default)
#   --post MODE      late or early (default late)
#   --trials N       alternating trials of every stack (default 3)
#   --bind MODE      cpu: rank r runs on processor r (taskset, the
#                    launcher's binding off; on the emulated nodes too,
#                    which share this host's processors); none: unbound
#                    (default cpu)
#   --timeout S      seconds one run may take (default 120)
#   --grace S        a job hung after its result is stopped (default 20)
#   --out DIR        results directory (default build/overlap)
#   --no-model       no ovloggp runs, no model table
#   --loggp ARGS     options for ovloggp (one word list, e.g. "--iters 3
#                    --size 8388608"; default none: its defaults)
#   --dry-run        print the runs, run nothing
#   --report RUNS.CSV OUTDIR  the tables again from an earlier run (the
#                    models too when a loggp.csv lies beside RUNS.CSV)
#   -h, --help       this text
#   PROGRAM-OPTIONS go to every program (e.g. -- --iters 20)
#   ZCAPPS_BIN, ZCAPPS_ZC_ENV, ZCAPPS_PREFIX as for tools/zcapps.sh
#                    (the emulated nodes' prefix here: default zco)
#
# Per trial, program and stack it runs the bulk version at the scale
# (T_E; its computation time is T_comp), each version X at the scale
# (T_X) and the bulk version at scale 0 (T_comm, no computation); each
# trial starts one stack further on. T is the program's wall time (from
# a barrier to a barrier, all exchanges); H is computed from the medians
# over the trials, and from each trial for the range. Writes
# DIR/runs.csv, DIR/overlap.csv and DIR/overlap.txt (the table, with the
# zcrecv counters of the X runs: early arrivals, hits, remaps, bytes
# copied from staging; runs.csv also has the messages deferred to their
# receive, the shared copies and the seconds in the layer, summed over
# the ranks) and DIR/logs/. Exits 1 when a run fails or the
# digests of one program at one scale disagree.
#
# DIR/phases.txt and phases.csv say where the time went: per program,
# stack, version and scale the medians of the wall time and of the
# seconds per rank in computation, starting communication, waiting and
# the barriers, and each version against the bulk one at the same scale:
# T/bulk (at --scale 0, Pencils against Exchange) with its range over
# single trials (each against the bulk run of its trial; at scale 0 its
# run without computation), and comp/bulk
# (how much the computation slows with communication beside it).
#
# The models (unless --no-model): per trial and stack ovloggp measures
# the stack's LogGP parameters per message size (DIR/loggp.csv); the FT
# and SpMV models of Documentation/apps.md ("The models") are evaluated
# from their medians for every run (bulk, no computation, each X) beside
# its measured wall time, with the error, model / measured - 1, and the
# share of points within +-15% (this host) or +-25% (two nodes):
# DIR/model.txt, DIR/model.csv, DIR/loggp.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
die() { echo "zcoverlap: $*" >&2; exit 2; }
# Stack commands, the checks, the cluster, running and reading a run:
# shared with tools/zcapps.sh.
. "$root/tools/apps/stacks.bash"

# The awk both tables share: values gathered per key (add) and their
# median (empty when there are none).
awk_lib='
	function median(key,   n, i, j, t, v) {
		n = split(vals[key], v, " ")
		if (!n) return ""
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	function add(key, x) { vals[key] = vals[key] " " x }
'

# The table from runs.csv: per configuration, program, stack and version.
report() {
	local runs=$1 dir=$2
	mkdir -p "$dir"
	awk -F, -v csv="$dir/overlap.csv" "$awk_lib"'
	function h(te, tx, tc, tp,   m) {
		m = tc < tp ? tc : tp
		return m > 0 ? (te - tx) / m : ""
	}
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	{
		cfg = $col["config"]; app = $col["app"]; st = $col["stack"]
		t = $col["trial"]; v = $col["version"]; kind = $col["kind"]
		if ($col["status"] != "ok") { failed[cfg, app, st]++; next }
		g = cfg SUBSEP app SUBSEP st
		if (!(g in seen)) { seen[g] = 1; groups[++ng] = g }
		if (kind == "bulk") {
			add(g SUBSEP "E", $col["wall"]); add(g SUBSEP "comp", $col["comp"])
			te[g, t] = $col["wall"]; tp[g, t] = $col["comp"]
			bulk[app] = v
		} else if (kind == "comm") {
			add(g SUBSEP "comm", $col["wall"]); tc[g, t] = $col["wall"]
		} else {
			if (!((g, v) in vseen)) { vseen[g, v] = 1; vers[g] = vers[g] " " v }
			add(g SUBSEP v, $col["wall"]); tx[g, v, t] = $col["wall"]
			add(g SUBSEP v SUBSEP "trials", t)
			for (k = 1; k <= 4; k++) {
				c = ctr[k]
				add(g SUBSEP v SUBSEP c, $col[c])
			}
		}
	}
	BEGIN { ctr[1] = "early"; ctr[2] = "hits"; ctr[3] = "remaps"; ctr[4] = "copied" }
	END {
		printf "%-6s %-7s %-9s %-7s %8s %8s %8s %8s %7s %-15s %6s %6s %6s %10s\n",
			"config", "app", "stack", "version", "T_E", "T_X", "T_comm",
			"T_comp", "H", "(trials)", "early", "hits", "remaps", "copied"
		print "config,app,stack,version,bulk,T_E,T_X,T_comm,T_comp,H,H_min,H_max,early,hits,remaps,copied" > csv
		for (i = 1; i <= ng; i++) {
			g = groups[i]; split(g, p, SUBSEP)
			e = median(g SUBSEP "E"); cm = median(g SUBSEP "comm")
			cp = median(g SUBSEP "comp")
			nv = split(vers[g], vl, " ")
			for (j = 1; j <= nv; j++) {
				v = vl[j]; x = median(g SUBSEP v)
				hh = (e != "" && cm != "" && cp != "") ? h(e, x, cm, cp) : ""
				# Per trial: the same formula on that trial alone.
				lo = ""; hi = ""
				nt = split(vals[g SUBSEP v SUBSEP "trials"], tl, " ")
				for (k = 1; k <= nt; k++) {
					t = tl[k]
					if (!((g, t) in te) || !((g, t) in tc)) continue
					ht = h(te[g, t], tx[g, v, t], tc[g, t], tp[g, t])
					if (ht == "") continue
					if (lo == "" || ht < lo) lo = ht
					if (hi == "" || ht > hi) hi = ht
				}
				for (k = 1; k <= 4; k++) cv[k] = median(g SUBSEP v SUBSEP ctr[k])
				printf "%-6s %-7s %-9s %-7s %8.4f %8.4f %8.4f %8.4f %7s %-15s %6s %6s %6s %10s\n",
					p[1], p[2], p[3], v, e, x, cm, cp,
					hh == "" ? "?" : sprintf("%.3f", hh),
					lo == "" ? "" : sprintf("(%.2f..%.2f)", lo, hi),
					cv[1], cv[2], cv[3], cv[4]
				printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
					p[1], p[2], p[3], v, bulk[p[2]], e, x, cm, cp,
					hh == "" ? "" : sprintf("%.4f", hh),
					lo == "" ? "" : sprintf("%.4f", lo),
					hi == "" ? "" : sprintf("%.4f", hi),
					cv[1], cv[2], cv[3], cv[4] > csv
			}
		}
		for (k in failed) {
			split(k, p, SUBSEP)
			printf "zcoverlap: %s %s %s: %d runs failed\n", p[1], p[2], p[3], failed[k]
		}
	}' "$runs" | tee "$dir/overlap.txt"
	phases "$runs" "$dir" || return 1
	# One digest per program and scale, whatever the stack and version.
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	$col["status"] == "ok" {
		k = $col["app"] " scale " $col["scale"]
		if (!(k in d)) { d[k] = $col["digest"]; w[k] = $col["stack"] " " $col["version"] }
		else if (d[k] != $col["digest"]) {
			printf "zcoverlap: digest mismatch: %s: %s (%s) against %s (%s %s trial %s)\n",
				k, d[k], w[k], $col["digest"], $col["stack"], $col["version"], $col["trial"] > "/dev/stderr"
			bad = 1
		}
	}
	END { exit bad }' "$runs"
}

# Where each run's time went, the paper's split: per configuration,
# program, stack, version and scale, the medians over the trials of the
# wall time and of the seconds per rank in computation, starting
# communication, waiting and the barriers (the programs' means over the
# ranks), and against the bulk version at the same scale the ratio of the
# walls and of the computations (X / bulk: how much a version's
# computation slows with communication beside it; at scale 0 the wall
# ratio is Pencils against Exchange). phases RUNS.CSV OUTDIR
phases() {
	local runs=$1 dir=$2
	awk -F, -v csv="$dir/phases.csv" "$awk_lib"'
	function ratio(a, b) { return a != "" && b != "" && b > 0 ? sprintf("%.3f", a / b) : "" }
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	$col["status"] == "ok" {
		k = $col["config"] SUBSEP $col["app"] SUBSEP $col["stack"] SUBSEP $col["scale"]
		v = $col["version"]; kind = $col["kind"]
		g = k SUBSEP v
		if (!(g in seen)) { seen[g] = 1; keys[++nk] = g }
		if (kind == "bulk" || kind == "comm") bulk[k] = v
		n[g]++
		tw[g, $col["trial"]] = $col["wall"]; add(g SUBSEP "trials", $col["trial"])
		add(g SUBSEP "wall", $col["wall"]); add(g SUBSEP "comp", $col["comp"])
		add(g SUBSEP "start", $col["start"]); add(g SUBSEP "wait", $col["wait"])
		add(g SUBSEP "barrier", $col["barrier"])
	}
	END {
		printf "%-6s %-7s %-9s %-5s %-5s %3s %8s %8s %8s %8s %8s %8s %-13s %8s\n",
			"config", "app", "stack", "ver", "scale", "n", "T", "comp",
			"start", "wait", "barrier", "T/bulk", "(trials)", "comp/bulk"
		print "config,app,stack,version,scale,runs,wall,comp,start,wait,barrier,wall_vs_bulk,wall_vs_bulk_min,wall_vs_bulk_max,comp_vs_bulk" > csv
		for (i = 1; i <= nk; i++) {
			g = keys[i]; split(g, p, SUBSEP)
			k = p[1] SUBSEP p[2] SUBSEP p[3] SUBSEP p[4]
			b = k SUBSEP bulk[k]
			for (j = 1; j <= 5; j++) m[j] = median(g SUBSEP f[j])
			rw = g == b ? "" : ratio(m[1], median(b SUBSEP "wall"))
			rc = g == b ? "" : ratio(m[2], median(b SUBSEP "comp"))
			# T/bulk of single trials: the version against the
			# bulk run of the same trial.
			lo = ""; hi = ""
			nt = g == b ? 0 : split(vals[g SUBSEP "trials"], tl, " ")
			for (j = 1; j <= nt; j++) {
				if (!((b, tl[j]) in tw) || tw[b, tl[j]] <= 0) continue
				r = tw[g, tl[j]] / tw[b, tl[j]]
				if (lo == "" || r < lo) lo = r
				if (hi == "" || r > hi) hi = r
			}
			printf "%-6s %-7s %-9s %-5s %-5s %3d %8.4f %8.4f %8.4f %8.4f %8.4f %8s %-13s %8s\n",
				p[1], p[2], p[3], p[5], p[4], n[g], m[1], m[2], m[3],
				m[4], m[5], rw == "" ? "-" : rw,
				lo == "" ? "" : sprintf("(%.2f..%.2f)", lo, hi),
				rc == "" ? "-" : rc
			printf "%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", p[1], p[2],
				p[3], p[5], p[4], n[g], m[1], m[2], m[3], m[4], m[5],
				rw, lo == "" ? "" : sprintf("%.4f", lo),
				hi == "" ? "" : sprintf("%.4f", hi), rc > csv
		}
	}
	BEGIN { f[1] = "wall"; f[2] = "comp"; f[3] = "start"; f[4] = "wait"; f[5] = "barrier" }
	' "$runs" > "$dir/phases.txt" || return 1
	echo "zcoverlap: where the time went (medians; seconds per rank):"
	cat "$dir/phases.txt"
}

# The models beside the runs (Documentation/apps.md, "The models"): the
# LogGP parameters of each configuration and stack from loggp.csv
# (medians over the trials, per message size; between two sizes linear,
# outside them the nearest), the FT model for every ovft run and the
# SpMV model for every ovspmv run, from the run's own computation time,
# against its wall time. model RUNS.CSV LOGGP.CSV OUTDIR
model_report() {
	local runs=$1 lg=$2 dir=$3
	mkdir -p "$dir"
	awk -F, -v mcsv="$dir/model.csv" -v ptxt="$dir/loggp.txt" "$awk_lib"'
	function max(a, b) { return a > b ? a : b }
	function min(a, b) { return a < b ? a : b }
	# Parameter p of configuration and stack cs at message size m.
	function par(cs, p, m,   n, i, a, b) {
		n = nsz[cs]
		if (m <= sz[cs, 1]) return pm[cs, sz[cs, 1], p]
		if (m >= sz[cs, n]) return pm[cs, sz[cs, n], p]
		for (i = 1; sz[cs, i + 1] < m; i++)
			;
		a = sz[cs, i]; b = sz[cs, i + 1]
		return pm[cs, a, p] + (pm[cs, b, p] - pm[cs, a, p]) * (m - a) / (b - a)
	}
	# One exchange of ovft on P ranks of N rows of R, k messages per
	# destination (e: all computation first), C seconds of computation.
	function ft(cs, P, N, R, k, e, C,   m, o, g, G, s, L, T, init, xfer) {
		m = N / (P * k) * R * 16
		o = par(cs, "o", m); g = par(cs, "g", m); G = par(cs, "G", m)
		s = m * par(cs, "copy", m); L = lat[cs]
		if (e) {
			init = C + o + (P - 2) * max(o, g) + s
			xfer = C + o + (P - 1) * m * G + L
		} else {
			T = C / (P * k)
			init = k * ((P - 2) * max(g, T + o) + max(g, 2 * T + o + s))
			xfer = T + o + k * (P - 1) * m * G + L
		}
		MSG = m
		M_start = init - C
		M_total = max(init, xfer)
		BOUND = xfer > init ? "transfer" : "init"
		return M_total + 2 * L
	}
	# One product of ovspmv, version v, blocks of N/P rows, rows of each
	# multiplied, C seconds of computation.
	function spmv(cs, P, N, rows, v, C,   b, oq, gq, ob, gb, G, L, T, d, cp, cm) {
		b = N / P * 8
		oq = par(cs, "o", 4); gq = par(cs, "g", 4)
		ob = par(cs, "o", b); gb = par(cs, "g", b); G = par(cs, "G", b)
		L = lat[cs]; T = C / P
		# The owner answers at its next look, every 4096 rows.
		d = rows > 0 ? T * min(1, 4096 / rows) : 0
		MSG = b
		if (v == "B") {
			M_start = oq + (P - 2) * max(oq, gq) + (P - 1) * ob
			M_total = M_start + 2 * L + (P - 1) * b * G + C
			BOUND = "transfer"
		} else {
			if (v == "G") {
				M_start = (P - 1) * (oq + ob)
				cp = (oq + T) * (P - 1) + T + (P - 1) * ob
				cm = oq + d + ob + 2 * L + b * G + T
				cm += (P - 2) * (max(oq, gq) + d + ob + 2 * L + b * G)
			} else {
				M_start = (P - 1) * ob
				cp = (ob + T) * (P - 1) + T
				cm = ob + L + b * G + T
				cm += (P - 2) * (max(ob, gb) + L + b * G)
			}
			M_total = max(cp, cm)
			BOUND = cm > cp ? "transfer" : "init"
		}
		return M_total + 2 * L
	}
	# The model of one run of point key with computation comp (seconds,
	# the whole run): its wall time; M_START and M_WAIT for the run.
	function model(key, comp,   a, cs, it, C, t) {
		a = app[key]; cs = cfgst[key]; it = iters[key]; C = comp / it
		if (a == "ovft")
			t = ft(cs, ranks[key], size[key], len[key], kk[key],
			       ver[key] == "E", C)
		else
			t = spmv(cs, ranks[key], size[key], rows[key], ver[key], C)
		M_START = M_start * it
		M_BAR = 2 * lat[cs] * it
		# No wait when the initiations are the longer (rounding aside).
		M_WAIT = max(0, M_total - C - M_start) * it
		return t * it
	}
	FNR == 1 {
		file++
		delete col
		for (i = 1; i <= NF; i++) col[$i] = i
		next
	}
	file == 1 {
		if ($col["status"] != "ok") next
		cs = $col["config"] SUBSEP $col["stack"]; m = $col["bytes"] + 0
		if (!(cs in ncs)) { ncs[cs] = 1; css[++ncss] = cs }
		if (!((cs, m) in szseen)) { szseen[cs, m] = 1; sz[cs, ++nsz[cs]] = m }
		for (i = 1; i <= 5; i++) add(cs SUBSEP m SUBSEP pn[i], $col[pn[i]])
		add(cs SUBSEP "L", $col["L"])
		next
	}
	{
		if ($col["status"] != "ok" || !("ranks" in col) || $col["ranks"] == "") next
		v = $col["version"]; a = $col["app"]
		if (a != "ovft" && a != "ovspmv") next
		key = $col["config"] SUBSEP a SUBSEP $col["stack"] SUBSEP $col["kind"] SUBSEP v SUBSEP $col["scale"]
		if (!(key in app)) {
			keys[++nk] = key; app[key] = a; ver[key] = v
			cfgst[key] = $col["config"] SUBSEP $col["stack"]
			ranks[key] = $col["ranks"]; size[key] = $col["size"]
			iters[key] = $col["iters"]; len[key] = $col["len"]
			rows[key] = $col["rows"]
			kk[key] = v == "E" || v == "S" ? 1 : v == "P" ? size[key] / ranks[key] : substr(v, 3) + 0
		}
		add(key SUBSEP "wall", $col["wall"]); add(key SUBSEP "comp", $col["comp"])
		add(key SUBSEP "start", $col["start"]); add(key SUBSEP "wait", $col["wait"])
		add(key SUBSEP "barrier", $col["barrier"])
		t = $col["trial"]; tw[key, t] = $col["wall"]; tc[key, t] = $col["comp"]
		add(key SUBSEP "trials", t)
	}
	BEGIN { pn[1] = "L"; pn[2] = "o"; pn[3] = "g"; pn[4] = "G"; pn[5] = "copy" }
	END {
		printf "%-6s %-9s %10s %9s %9s %9s %9s %9s\n", "config", "stack",
			"bytes", "L us", "o us", "g us", "G ns/B", "copy ns/B" > ptxt
		for (j = 1; j <= ncss; j++) {
			cs = css[j]; n = nsz[cs]; split(cs, p, SUBSEP)
			# Sizes in order.
			for (i = 2; i <= n; i++)
				for (k = i; k > 1 && sz[cs, k - 1] > sz[cs, k]; k--) {
					t = sz[cs, k]; sz[cs, k] = sz[cs, k - 1]; sz[cs, k - 1] = t
				}
			lat[cs] = median(cs SUBSEP "L")
			for (i = 1; i <= n; i++) {
				m = sz[cs, i]
				for (k = 1; k <= 5; k++)
					pm[cs, m, pn[k]] = median(cs SUBSEP m SUBSEP pn[k])
				printf "%-6s %-9s %10d %9.3f %9.3f %9.3f %9.4f %9.4f\n",
					p[1], p[2], m, pm[cs, m, "L"] * 1e6, pm[cs, m, "o"] * 1e6,
					pm[cs, m, "g"] * 1e6, pm[cs, m, "G"] * 1e9,
					pm[cs, m, "copy"] * 1e9 > ptxt
			}
		}
		printf "%-6s %-7s %-9s %-5s %-5s %8s %8s %7s %-15s %8s %8s %8s %8s %8s %8s %-8s %9s\n",
			"config", "app", "stack", "ver", "scale", "T", "model", "err",
			"(trials)", "start", "m.start", "wait", "m.wait", "barrier",
			"m.bar", "bound", "msg B"
		print "config,app,stack,kind,version,scale,msg_bytes,T,T_model,err,err_min,err_max,start,start_model,wait,wait_model,barrier,barrier_model,bound" > mcsv
		for (i = 1; i <= nk; i++) {
			key = keys[i]; split(key, p, SUBSEP)
			if (!(cfgst[key] in ncs)) { nopar[p[1] " " p[3]] = 1; continue }
			w = median(key SUBSEP "wall"); c = median(key SUBSEP "comp")
			mt = model(key, c); ms = M_START; mw = M_WAIT; mb = M_BAR
			e = mt / w - 1
			lo = ""; hi = ""
			nt = split(vals[key SUBSEP "trials"], tl, " ")
			for (k = 1; k <= nt; k++) {
				et = model(key, tc[key, tl[k]]) / tw[key, tl[k]] - 1
				if (lo == "" || et < lo) lo = et
				if (hi == "" || et > hi) hi = et
			}
			# The interval of the criterion: 15% on one host, 25% across nodes.
			tol = p[1] == "node" ? 0.15 : 0.25
			g = p[1] SUBSEP p[3]
			if (!(g in npt)) grp[++ng] = g
			npt[g]++; if (e >= -tol && e <= tol) nin[g]++
			ncfg[p[1]]++; if (e >= -tol && e <= tol) ncin[p[1]]++
			tolof[p[1]] = tol
			printf "%-6s %-7s %-9s %-5s %-5s %8.4f %8.4f %+6.1f%% %-15s %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %-8s %9d\n",
				p[1], p[2], p[3], p[5], p[6], w, mt, 100 * e,
				sprintf("(%+.0f..%+.0f%%)", 100 * lo, 100 * hi),
				median(key SUBSEP "start"), ms, median(key SUBSEP "wait"), mw,
				median(key SUBSEP "barrier"), mb, BOUND, MSG
			printf "%s,%s,%s,%s,%s,%s,%d,%s,%.6f,%.4f,%.4f,%.4f,%s,%.6f,%s,%.6f,%s,%.6f,%s\n",
				p[1], p[2], p[3], p[4], p[5], p[6], MSG, w, mt, e, lo, hi,
				median(key SUBSEP "start"), ms, median(key SUBSEP "wait"), mw,
				median(key SUBSEP "barrier"), mb, BOUND > mcsv
		}
		for (i = 1; i <= ng; i++) {
			split(grp[i], p, SUBSEP)
			printf "model: %s %s: %d of %d points within +-%d%%\n", p[1], p[2],
				nin[grp[i]], npt[grp[i]], 100 * tolof[p[1]]
		}
		for (c in ncfg)
			printf "model: %s: %d of %d points within +-%d%% (%.0f%%; the criterion: 80%%)\n",
				c, ncin[c], ncfg[c], 100 * tolof[c], 100 * ncin[c] / ncfg[c]
		for (c in nopar)
			printf "model: %s: no LogGP parameters, not modelled\n", c
	}' "$lg" "$runs" | tee "$dir/model.txt"
	echo "zcoverlap: LogGP parameters (medians over the trials):"
	cat "$dir/loggp.txt"
}

apps=ovft,ovspmv versions=S,P,X:8,G stacks=ompi,zc-auto configs=node
scales=ovft=0.08,ovspmv=0.02 iters=ovspmv=800
post=late trials=3 timeout=120 grace=20 out=$root/build/overlap dry=0 pin=1
models=1 loggp_args=""
prog_args=()
val() { [ $# -ge 2 ] || { echo "zcoverlap: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
	case $1 in
	--apps) val "$@"; apps=$2; shift ;;
	--versions) val "$@"; versions=$2; shift ;;
	--stacks) val "$@"; stacks=$2; shift ;;
	--configs) val "$@"; configs=$2; shift ;;
	--scale) val "$@"; scales=$2; shift ;;
	--iters) val "$@"; iters=$2; shift ;;
	--post) val "$@"; post=$2; shift ;;
	--trials) val "$@"; trials=$2; shift ;;
	--bind) val "$@"
		case $2 in cpu) pin=1 ;; none) pin=0 ;;
		*) die "--bind $2: cpu or none" ;; esac
		shift ;;
	--timeout) val "$@"; timeout=$2; shift ;;
	--grace) val "$@"; grace=$2; shift ;;
	--out) val "$@"; out=$2; shift ;;
	--no-model) models=0 ;;
	--loggp) val "$@"; loggp_args=$2; shift ;;
	--dry-run) dry=1 ;;
	--report)
		[ $# = 3 ] || { usage >&2; exit 2; }
		[ -s "$2" ] || die "$2: no such runs.csv"
		report "$2" "$3"
		rc=$?
		lg=$(dirname "$2")/loggp.csv
		[ ! -s "$lg" ] || model_report "$2" "$lg" "$3"
		exit $rc ;;
	-h|--help) usage; exit 0 ;;
	--) shift; prog_args=("$@"); break ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

bin=${ZCAPPS_BIN:-$root/build/tools/apps}
zc_env=${ZCAPPS_ZC_ENV:-}
mpi=$root/build/tools/mpi
cluster=$root/tools/cluster/zccluster
prefix=${ZCAPPS_PREFIX:-zco}
[[ $prefix =~ ^[a-z]{1,8}$ ]] ||
	die "ZCAPPS_PREFIX: '$prefix' is not 1 to 8 lower-case letters"
export ZCCLUSTER_PREFIX=$prefix
case $post in late|early) ;; *) die "--post $post: late or early" ;; esac
IFS=, read -ra APPS <<< "$apps"
IFS=, read -ra VERSIONS <<< "$versions"
IFS=, read -ra STACKS <<< "$stacks"
IFS=, read -ra CONFIGS <<< "$configs"
declare -A bulk_of=([ovft]=E [ovspmv]=B) scale_of=() iters_of=()
for a in "${APPS[@]}"; do
	[ -n "${bulk_of[$a]:-}" ] || die "--apps: unknown program '$a' (ovft, ovspmv)"
done
for s in "${STACKS[@]}"; do
	case $s in ompi|mpich|zc-copy|zc-remap|zc-auto|zc-mpich) ;;
	*) die "--stacks: unknown stack '$s' (ompi, mpich, zc-copy, zc-remap, zc-auto, zc-mpich)" ;;
	esac
done
check_options
fnum='^(0|1|0?\.[0-9]+|1\.0*)$'
IFS=, read -ra SC <<< "$scales"
for s in "${SC[@]}"; do
	if [[ $s == *=* ]]; then
		[ -n "${bulk_of[${s%%=*}]:-}" ] || die "--scale $s: unknown program"
		[[ ${s#*=} =~ $fnum ]] || die "--scale $s: a number from 0 to 1"
		scale_of[${s%%=*}]=${s#*=}
	else
		[[ $s =~ $fnum ]] || die "--scale $s: a number from 0 to 1"
		for a in ovft ovspmv; do scale_of[$a]=$s; done
	fi
done
IFS=, read -ra IT <<< "$iters"
for s in "${IT[@]}"; do
	if [[ $s == *=* ]]; then
		[ -n "${bulk_of[${s%%=*}]:-}" ] || die "--iters $s: unknown program"
		[[ ${s#*=} =~ ^[1-9][0-9]*$ ]] || die "--iters $s: a positive whole number"
		iters_of[${s%%=*}]=${s#*=}
	else
		[[ $s =~ ^[1-9][0-9]*$ ]] || die "--iters $s: a positive whole number"
		for a in ovft ovspmv; do iters_of[$a]=$s; done
	fi
done
# The versions each program has.
versions_of() {
	local v out=()
	for v in "${VERSIONS[@]}"; do
		case $1:$v in
		ovft:S|ovft:P|ovft:X:[1-9]*|ovspmv:G|ovspmv:S) out+=("$v") ;;
		esac
	done
	echo "${out[*]}"
}
for a in "${APPS[@]}"; do
	[ -n "${scale_of[$a]:-}" ] || die "--scale: none given for $a"
	[ -n "$(versions_of "$a")" ] || die "--versions $versions: none of them is a version of $a"
done
read -ra LOGGP_ARGS <<< "$loggp_args"
if [ "$dry" = 0 ]; then
	check_needs
	if [ "$models" = 1 ]; then
		for s in "${STACKS[@]}"; do
			case $s in
			mpich|zc-mpich) need "$bin/ovloggp-mpich" "run make (needs MPICH's mpicc.mpich)" ;;
			*) need "$bin/ovloggp" "run make (needs Open MPI's mpicc)" ;;
			esac
		done
	fi
	[ "$pin" = 0 ] || command -v taskset >/dev/null ||
		die "taskset not found (util-linux); or --bind none"
fi

runs=$out/runs.csv
# A dry run leaves an earlier run's results alone.
[ "$dry" = 1 ] || mkdir -p "$out/logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

[ "$dry" = 1 ] ||
	echo "config,app,stack,trial,kind,version,scale,status,wall,comp,start,wait,barrier,msgs,check,digest,early,hits,remaps,copied,deferred,shared,layer_s,ranks,size,iters,len,rows" > "$runs"
lgcsv=$out/loggp.csv
[ "$dry" = 1 ] || [ "$models" = 0 ] ||
	echo "config,stack,trial,status,bytes,count,L,o,g,G,copy" > "$lgcsv"
nruns=$models
for a in "${APPS[@]}"; do
	nruns=$((nruns + 2 + $(wc -w <<< "$(versions_of "$a")")))
done
total=$(( ${#CONFIGS[@]} * trials * ${#STACKS[@]} * nruns ))
echo "zcoverlap: $total runs: configurations $configs; programs $apps; stacks $stacks; $trials trials; post $post; scales $scales; iters $iters${prog_args[*]:+; program options ${prog_args[*]}}"
failed=0 n=0

run_one() {	# config app stack trial kind version scale
	local cfg=$1 app=$2 stack=$3 t=$4 kind=$5 v=$6 sc=$7 log line rc status
	local it=()
	[ -z "${iters_of[$app]:-}" ] || it=(--iters "${iters_of[$app]}")
	command_of "$stack" "$cfg" "$app" --post "$post" --version "$v" \
		--scale "$sc" "${it[@]}" "${prog_args[@]}"
	n=$((n + 1))
	if [ "$dry" = 1 ]; then
		echo "[$n/$total] ${CMD[*]}"
		return
	fi
	log=$out/logs/$cfg-$app-$stack-$kind-${v/:/}-$t
	launch_and_wait "$log"
	rc=$?
	line=$(grep -m1 '^zcapp: ' "$log.out")
	run_status "$rc" "$line"
	status=$STATUS
	if [ "$status" != ok ]; then
		failed=$((failed + 1))
		echo "zcoverlap: $cfg $app $stack $v scale $sc trial $t: $status (${CMD[*]}); $log.err:" >&2
		tail -n 5 "$log.err" >&2
	fi
	local f=$log.err
	echo "$cfg,$app,$stack,$t,$kind,$v,$sc,$status,$(kv "$line" wall),$(kv "$line" comp),$(kv "$line" start),$(kv "$line" wait),$(kv "$line" barrier),$(kv "$line" msgs),$(kv "$line" check),$(kv "$line" digest),$(sumr "$f" early),$(sumr "$f" hits),$(sumr "$f" remaps),$(sumr "$f" copied),$(sumr "$f" deferred),$(sumr "$f" shared),$(sed -n 's/.*in layer \([0-9.]*\) s.*/\1/p' "$f" | awk '{s += $1} END {printf "%.3f", s}'),$(kv "$line" ranks),$(kv "$line" size),$(kv "$line" iters),$(kv "$line" len),$(kv "$line" rows)" >> "$runs"
	printf '[%d/%d] %-5s %-7s %-8s %-5s scale %-5s trial %d: %s %ss\n' "$n" \
		"$total" "$cfg" "$app" "$stack" "$v" "$sc" "$t" "$status" "$(kv "$line" wall)"
}

# The stack's LogGP parameters: one ovloggp run, its csv lines into
# loggp.csv. run_loggp config stack trial
run_loggp() {
	local cfg=$1 stack=$2 t=$3 log rc line
	command_of "$stack" "$cfg" ovloggp --post "$post" "${LOGGP_ARGS[@]}"
	n=$((n + 1))
	if [ "$dry" = 1 ]; then
		echo "[$n/$total] ${CMD[*]}"
		return
	fi
	log=$out/logs/$cfg-ovloggp-$stack-$t
	launch_and_wait "$log"
	rc=$?
	line=$(grep -m1 '^zcapp: ' "$log.out")
	run_status "$rc" "$line"
	if [ "$STATUS" != ok ]; then
		failed=$((failed + 1))
		echo "zcoverlap: $cfg ovloggp $stack trial $t: $STATUS (${CMD[*]}); $log.err:" >&2
		tail -n 5 "$log.err" >&2
	fi
	sed -n "s/^csv,\([0-9]\)/$cfg,$stack,$t,$STATUS,\1/p" "$log.out" |
		cut -d, -f1-11 >> "$lgcsv"
	printf '[%d/%d] %-5s %-7s %-8s trial %d: %s %ss\n' "$n" "$total" \
		"$cfg" ovloggp "$stack" "$t" "$STATUS" "$(kv "$line" wall)"
}

for cfg in "${CONFIGS[@]}"; do
	if [ "$dry" = 0 ] && ! config_up "$cfg"; then
		echo "zcoverlap: cannot bring up the emulated cluster for $cfg" >&2
		exit 1
	fi
	for ((t = 1; t <= trials; t++)); do
		if [ "$models" = 1 ]; then
			for ((i = 0; i < ${#STACKS[@]}; i++)); do
				run_loggp "$cfg" "${STACKS[$(( (i + t - 1) % ${#STACKS[@]} ))]}" "$t"
			done
		fi
		for a in "${APPS[@]}"; do
			b=${bulk_of[$a]} sc=${scale_of[$a]}
			kinds=("bulk $b $sc" "comm $b 0")
			for v in $(versions_of "$a"); do kinds+=("x $v $sc"); done
			for k in "${kinds[@]}"; do
				read -r kind v s <<< "$k"
				# Alternate: each trial starts one stack further on.
				for ((i = 0; i < ${#STACKS[@]}; i++)); do
					st=${STACKS[$(( (i + t - 1) % ${#STACKS[@]} ))]}
					run_one "$cfg" "$a" "$st" "$t" "$kind" "$v" "$s"
				done
			done
		done
	done
	cleanup
done
[ "$dry" = 1 ] && exit 0
report "$runs" "$out" || failed=$((failed + 1))
[ "$models" = 0 ] || model_report "$runs" "$lgcsv" "$out"
[ "$failed" = 0 ] || { echo "zcoverlap: $failed failures" >&2; exit 1; }
