#!/bin/bash
# zcapps-report.sh - the tables and plot of the application bench, from the
# runs.csv that tools/zcapps.sh writes (it calls this; run it again by hand
# to re-read an earlier run).
#
# Usage: tools/zcapps-report.sh RUNS.CSV OUTDIR
#          writes OUTDIR/summary.csv and OUTDIR/summary.txt, prints the
#          summary; exits 1 when a program's digests differ between runs
#          or no run succeeded
#        tools/zcapps-report.sh --png SUMMARY.CSV OUT.PNG
#          plots each stack's median wall time over stock Open MPI's
#        tools/zcapps-report.sh -h|--help
#
# Per configuration, program, comm and post mode and stack: the median
# wall time over the successful trials, its minimum and maximum, the ratio
# of the medians to stock Open MPI's (vs_ompi) and the range of the
# per-trial ratios (trial t of a stack over trial t of ompi: runs that
# alternated), the mean computation / start / wait times and the zcrecv
# layer's counters per run. A zcrecv stack more than 2% slower than stock
# Open MPI gets a line saying where the time went and what zcrecv carried,
# in how many of the paired trials it was the slower, and, when the run
# had the ompi-again stack (stock Open MPI once more in every trial), how
# far stock Open MPI was from itself: this host's noise, against which a
# ratio is to be read.
set -uo pipefail
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }
case ${1:-} in
-h|--help) usage; exit 0 ;;
--png)
	[ $# = 3 ] || { usage >&2; exit 2; }
	mode=png ;;
-*) usage >&2; exit 2 ;;
*) [ $# = 2 ] || { usage >&2; exit 2; }
	mode=table ;;
esac

if [ "$mode" = png ]; then
	sum=$2 png=$3
	command -v gnuplot >/dev/null || { echo "zcapps-report: gnuplot missing" >&2; exit 1; }
	[ -s "$sum" ] || { echo "zcapps-report: $sum: no such summary" >&2; exit 1; }
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# One data file per configuration: a row per program (and mode), a
	# column per stack other than ompi, the ratio to ompi.
	awk -F, -v dir="$tmp" '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	$5 != "ompi" && $col["vs_ompi"] != "" {
		cfg = $1; row = $2 ($3 == "p2p" && $4 == "late" ? "" : "/" $3 ($3 != "coll" ? "-" $4 : ""))
		if (!(cfg in seen)) { seen[cfg] = 1; cfgs[++nc] = cfg }
		if (!((cfg, row) in rseen)) { rseen[cfg, row] = 1; rows[cfg, ++nr[cfg]] = row }
		if (!($5 in sseen)) { sseen[$5] = 1; st[++ns] = $5 }
		v[cfg, row, $5] = $col["vs_ompi"]
	}
	END {
		for (c = 1; c <= nc; c++) {
			f = dir "/" cfgs[c] ".dat"
			h = "program"
			for (s = 1; s <= ns; s++) h = h " " st[s]
			print h > f
			for (r = 1; r <= nr[cfgs[c]]; r++) {
				row = rows[cfgs[c], r]; l = row
				for (s = 1; s <= ns; s++) {
					x = v[cfgs[c], row, st[s]]
					l = l " " (x == "" ? "?" : x)
				}
				print l > f
			}
			close(f)
			print cfgs[c] > (dir "/configs")
		}
		print ns > (dir "/nstacks")
	}' "$sum"
	[ -s "$tmp/configs" ] || { echo "zcapps-report: nothing to plot (no stack beside ompi)" >&2; exit 1; }
	nc=$(wc -l < "$tmp/configs")
	ns=$(cat "$tmp/nstacks")
	{
		echo "set terminal pngcairo size $((420 * nc + 300)),560 noenhanced"
		echo "set output '$png'"
		echo "set multiplot layout 1,$nc title 'Wall time over stock Open MPI, median of alternating trials (below 1: faster)'"
		echo "set style data histograms; set style histogram clustered gap 1"
		echo "set style fill solid 0.8 border -1; set boxwidth 0.9"
		echo "set datafile missing '?'; set key below horizontal; set grid ytics"
		echo "set yrange [0:*]; set xtics rotate by -30"
		while read -r c; do
			echo "set title '$c'"
			echo "set ylabel 'time / stock Open MPI'"
			printf "plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i), 1.0 with lines lc rgb 'black' dt 2 notitle, 1.02 with lines lc rgb 'red' dt 3 title '+2%%'\n" \
				"$((ns + 1))" "$tmp/$c.dat"
		done < "$tmp/configs"
		echo "unset multiplot"
	} > "$tmp/plot.gp"
	gnuplot "$tmp/plot.gp" || exit 1
	echo "zcapps-report: plot written to $png"
	exit 0
fi

runs=$1 out=$2
[ -s "$runs" ] || { echo "zcapps-report: $runs: no such runs file" >&2; exit 1; }
mkdir -p "$out" || exit 1
# mawk (Debian's awk) has no sort: the medians sort their few values by
# insertion.
awk -F, -v sumcsv="$out/summary.csv" -v sumtxt="$out/summary.txt" '
function median(key, n,    i, j, x, a) {
	for (i = 1; i <= n; i++) a[i] = w[key, i]
	for (i = 2; i <= n; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
		a[j + 1] = x
	}
	lo[key] = a[1]; hi[key] = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function out(s) { print s; print s > sumtxt }
# rmin, rmax: the range of the per-trial ratios of key to ref (rmax 0: none).
function ratios(key, ref,    t, r) {
	rmin = 1e9; rmax = 0
	for (t = 1; t <= maxt; t++)
		if (((key, t) in trial) && ((ref, t) in trial) && trial[ref, t] > 0) {
			r = trial[key, t] / trial[ref, t]
			if (r < rmin) rmin = r
			if (r > rmax) rmax = r
		}
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
	key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
	if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
	nrun[key]++
	if ($col["status"] != "ok") { bad[key]++; next }
	n = ++nok[key]
	if (("note" in col) && $col["note"] == "hung-at-exit") hung[key]++
	w[key, n] = $col["wall"] + 0
	trial[key, $col["trial"]] = $col["wall"] + 0
	if ($col["trial"] + 0 > maxt) maxt = $col["trial"] + 0
	comp[key] += $col["comp"]; start[key] += $col["start"]; wt[key] += $col["wait"]
	split("zc_recv early hits remaps pages copied coll_calls coll_bytes shm_peers tcp_peers", cn, " ")
	for (i = 1; i <= 10; i++) cnt[key, cn[i]] += $col[cn[i]]
	dk = $2 SUBSEP $3 SUBSEP $4
	if (!(dk in digest)) { digest[dk] = $col["digest"]; dwhere[dk] = $1 " " $5 " trial " $col["trial"] }
	else if (digest[dk] != $col["digest"] && !(dk in dbad)) {
		dbad[dk] = 1; ndbad++
		dmsg[ndbad] = "digest mismatch: " $2 " " $3 " " $4 ": " digest[dk] " (" dwhere[dk] ") against " $col["digest"] " (" $1 " " $5 " trial " $col["trial"] ")"
	}
}
END {
	print "config,app,comm,post,stack,runs,ok,wall_median,wall_min,wall_max,vs_ompi,ratio_min,ratio_max,comp,start,wait,zc_recv,early,hits,remaps,pages,copied,coll_calls,coll_bytes,shm_peers,tcp_peers" > sumcsv
	for (k = 1; k <= nk; k++) {
		key = keys[k]; n = nok[key]
		if (n) med[key] = median(key, n)
	}
	# The per-trial ratios of ompi-again to ompi: the yardstick.
	for (k = 1; k <= nk; k++) {
		key = keys[k]
		split(key, f, SUBSEP)
		if (f[5] != "ompi-again") continue
		ref = f[1] SUBSEP f[2] SUBSEP f[3] SUBSEP f[4] SUBSEP "ompi"
		ratios(key, ref)
		aamin[key] = rmax ? sprintf("%.3f", rmin) : "?"
		aamax[key] = rmax ? sprintf("%.3f", rmax) : "?"
	}
	out(sprintf("%-7s %-6s %-10s %-8s %8s %17s %8s %13s %6s %6s %6s  %s",
		"config", "app", "mode", "stack", "wall_s", "min-max", "vs_ompi", "trial_ratios",
		"comp", "start", "wait", "zcrecv: recv early hits remaps | collectives"))
	for (k = 1; k <= nk; k++) {
		key = keys[k]; n = nok[key]
		split(key, f, SUBSEP)
		ref = f[1] SUBSEP f[2] SUBSEP f[3] SUBSEP f[4] SUBSEP "ompi"
		vs = ""; rmin = ""; rmax = ""
		if (n && nok[ref] && med[ref] > 0) {
			vs = sprintf("%.3f", med[key] / med[ref])
			ratios(key, ref)
			if (rmax == 0) { rmin = ""; rmax = "" }
			else { rmin = sprintf("%.3f", rmin); rmax = sprintf("%.3f", rmax) }
		}

		line = f[1] "," f[2] "," f[3] "," f[4] "," f[5] "," nrun[key] "," n+0
		if (n) {
			line = line sprintf(",%.4f,%.4f,%.4f,%s,%s,%s,%.4f,%.4f,%.4f", med[key], lo[key], hi[key], vs, rmin, rmax,
				comp[key] / n, start[key] / n, wt[key] / n)
			for (i = 1; i <= 10; i++) line = line "," int(cnt[key, cn[i]] / n + 0.5)
		} else {
			line = line ",,,,,,,,,"
			for (i = 1; i <= 10; i++) line = line ","
		}
		print line > sumcsv
		mode = f[3] (f[3] != "coll" ? "/" f[4] : "")
		if (!n) {
			out(sprintf("%-7s %-6s %-10s %-8s %8s   (all %d runs failed)", f[1], f[2], mode, f[5], "-", nrun[key]))
			continue
		}
		zc = f[5] ~ /^zc-/ ? sprintf("%d %d %d %d | %d calls %.1f MB", cnt[key, "zc_recv"] / n, cnt[key, "early"] / n,
			cnt[key, "hits"] / n, cnt[key, "remaps"] / n, cnt[key, "coll_calls"] / n, cnt[key, "coll_bytes"] / n / 1e6) : ""
		out(sprintf("%-7s %-6s %-10s %-8s %8.3f %8.3f-%-8.3f %8s %13s %6.3f %6.3f %6.3f  %s%s",
			f[1], f[2], mode, f[5], med[key], lo[key], hi[key], vs == "" ? "-" : vs,
			rmin == "" ? "-" : rmin "-" rmax, comp[key] / n, start[key] / n, wt[key] / n, zc,
			(bad[key] ? sprintf("  (%d failed)", bad[key]) : "") (hung[key] ? sprintf("  (%d hung at exit)", hung[key]) : "")))
		if (f[5] ~ /^zc-/ && vs != "" && vs + 0 > 1.02) {
			nl++
			# Paired trials it lost; stock against itself.
			slow = 0; np = 0
			for (t = 1; t <= maxt; t++)
				if (((key, t) in trial) && ((ref, t) in trial)) {
					np++
					if (trial[key, t] > trial[ref, t]) slow++
				}
			aa = f[1] SUBSEP f[2] SUBSEP f[3] SUBSEP f[4] SUBSEP "ompi-again"
			noise = ""
			if (nok[aa] && med[ref] > 0) {
				noise = sprintf(" Stock Open MPI against itself in the same run: %.3fx (trial ratios %s-%s)%s.",
					med[aa] / med[ref], aamin[aa], aamax[aa],
					med[aa] / med[ref] >= vs + 0 || aamax[aa] + 0 >= vs + 0 ? ", as far off as this: within this host'"'"'s noise" : "")
				if (med[aa] / med[ref] >= vs + 0 || aamax[aa] + 0 >= vs + 0) nnoise++
			}
			why[nl] = sprintf("%s %s %s %s: %.3fx stock Open MPI (median %.3f s against %.3f s; slower in %d of %d paired trials).%s Per rank: computation %+.3f s, starting communication %+.3f s, waiting %+.3f s against ompi. zcrecv carried %d messages per run (%d early, %d at the predicted offset, %d remapped, %.1f MB copied from staging); collectives left to the MPI: %d calls, %.1f MB received per run; peers %d shm %d tcp.",
				f[1], f[2], mode, f[5], vs, med[key], med[ref], slow, np, noise,
				comp[key] / n - comp[ref] / nok[ref], start[key] / n - start[ref] / nok[ref], wt[key] / n - wt[ref] / nok[ref],
				cnt[key, "zc_recv"] / n, cnt[key, "early"] / n, cnt[key, "hits"] / n, cnt[key, "remaps"] / n,
				cnt[key, "copied"] / n / 1e6, cnt[key, "coll_calls"] / n, cnt[key, "coll_bytes"] / n / 1e6,
				cnt[key, "shm_peers"] / n, cnt[key, "tcp_peers"] / n)
		}
	}
	out("")
	if (nl) {
		out("Where zcrecv runs more than 2% slower than stock Open MPI:")
		for (i = 1; i <= nl; i++) out("  " why[i])
		if (nnoise)
			out(sprintf("%d of these %d are no further from stock Open MPI than stock Open MPI was from itself (ompi-again) in the same run.", nnoise, nl))
	} else {
		out("No zcrecv stack ran more than 2% slower than stock Open MPI (medians).")
	}
	for (i = 1; i <= ndbad; i++) out(dmsg[i])
	if (!ndbad) out("Digests: every program gave the same result in every successful run.")
	exit ndbad ? 1 : 0
}' "$runs"
rc=$?
echo "zcapps-report: $out/summary.csv, $out/summary.txt"
exit $rc
