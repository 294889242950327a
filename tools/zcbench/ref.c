// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ref.c - zcbench's reference lines: NetPIPE's NPtcp over the
 * same loopback (--nptcp), NPopenmpi over Open MPI's shared memory
 * (--npopenmpi, before and after the run and beside each round of
 * trials; --npopenmpi-layer over libzcrecv-mpi.so), perftest's
 * ib_send_lat and ib_write_bw over the RDMA device (--perftest). Each is
 * run as its own program, with the ranks of zcbench unbound meanwhile.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/config.h"
#include "zcbench.h"

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl))
		return -1;
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* NetPIPE's NPtcp over loopback, output in NPtcp's own format to file. */
static int run_nptcp(uint64_t min, uint64_t max, const char *file)
{
	char cmd[512];
	int port = free_port(), ret;
	pid_t rx;

	if (port < 0 || system("command -v NPtcp >/dev/null 2>&1"))
		return -ENOENT;
	fflush(stdout);
	rx = fork();
	if (rx == 0) {
		char p[16], l[32], u[32];

		snprintf(p, sizeof(p), "%d", port);
		snprintf(l, sizeof(l), "%llu", (unsigned long long)min);
		snprintf(u, sizeof(u), "%llu", (unsigned long long)max);
		if (!freopen("/dev/null", "w", stdout) ||
		    !freopen("/dev/null", "w", stderr))
			_exit(127);
		execlp("NPtcp", "NPtcp", "-P", p, "-l", l, "-u", u, "-p", "0",
		       (char *)NULL);
		_exit(127);
	}
	usleep(300000);
	snprintf(cmd, sizeof(cmd),
		 "NPtcp -h 127.0.0.1 -P %d -l %llu -u %llu -p 0 -o %s "
		 ">/dev/null 2>&1", port, (unsigned long long)min,
		 (unsigned long long)max, file);
	ret = system(cmd);
	kill(rx, SIGTERM);
	waitpid(rx, NULL, 0);
	return ret ? -EIO : 0;
}

static int run_nptcp_unbound(uint64_t min, uint64_t max, const char *file)
{
	int ret;

	unbind();
	ret = run_nptcp(min, max, file);
	rebind();
	return ret;
}

/* The Open MPI reference: NPopenmpi, shared-memory BTL (vader). */
const char *ompi_ref;

/* NPopenmpi's first run (before zcbench's), removed at exit. */
static char ompi_first[64];
static pid_t ompi_first_owner;
static bool ompi_first_ok;

static void ompi_first_unlink(void)
{
	if (ompi_first[0] && getpid() == ompi_first_owner)
		unlink(ompi_first);
	ompi_first[0] = 0;
}

/*
 * NPopenmpi from min to max into file; with layer (a libzcrecv-mpi.so),
 * the same program with its point-to-point calls carried by zcrecv
 * (LD_PRELOAD, shared memory between the two ranks).
 */
static int run_npompi(uint64_t min, uint64_t max, const char *file,
		      const char *layer)
{
	char cmd[1024], pre[600] = "";
	int ret;

	if (system("command -v NPopenmpi >/dev/null 2>&1 && "
		   "command -v mpirun >/dev/null 2>&1"))
		return -ENOENT;
	if (layer) {
		if (access(layer, R_OK) || strchr(layer, '\'') ||
		    strlen(layer) > 500)
			return -ENOENT;
		snprintf(pre, sizeof(pre), "-x ZCRECV_SHM=1 "
			 "-x 'LD_PRELOAD=%s' ", layer);
	}
	fflush(stdout);
	snprintf(cmd, sizeof(cmd),
		 "mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl "
		 "self,vader %sNPopenmpi -l %llu -u %llu -p 0 -o %s "
		 ">/dev/null 2>&1", pre, (unsigned long long)min,
		 (unsigned long long)max, file);
	unbind();
	ret = system(cmd);
	rebind();
	return ret ? -EIO : 0;
}

/*
 * Two NetPIPE outputs of the same sizes (lines "bytes Mbps seconds") into
 * out (which may be a or b), per size the line of the faster run. 0, or
 * -errno with out untouched (-EINVAL: the two do not list the same sizes).
 */
static int merge_np(const char *a, const char *b, const char *out)
{
	char la[256], lb[256], tmp[600];
	unsigned long long ba, bb;
	double ma, mb, sa, sb;
	int ret = 0, n = 0;
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r"), *fo;
	char buf[64 * 256];
	size_t len = 0;

	if (!fa || !fb) {
		if (fa)
			fclose(fa);
		if (fb)
			fclose(fb);
		return -ENOENT;
	}
	while (fgets(lb, sizeof(lb), fb)) {
		const char *pick = lb;

		if (!fgets(la, sizeof(la), fa) ||
		    sscanf(la, "%llu %lf %lf", &ba, &ma, &sa) != 3 ||
		    sscanf(lb, "%llu %lf %lf", &bb, &mb, &sb) != 3 ||
		    ba != bb)
			ret = -EINVAL;
		else if (sa < sb)
			pick = la;
		if (len + strlen(pick) >= sizeof(buf)) {
			ret = -E2BIG;
			break;
		}
		memcpy(buf + len, pick, strlen(pick));
		len += strlen(pick);
		n++;
	}
	if (!ret && fgets(la, sizeof(la), fa))
		ret = -EINVAL;		/* a lists more sizes */
	fclose(fa);
	fclose(fb);
	if (!ret && !n)
		ret = -EINVAL;
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.merge", out);
	fo = fopen(tmp, "w");
	if (!fo)
		return -errno;
	if (fwrite(buf, 1, len, fo) != len) {
		fclose(fo);
		unlink(tmp);
		return -EIO;
	}
	if (fclose(fo) || rename(tmp, out)) {
		ret = -errno;
		unlink(tmp);
		return ret;
	}
	return 0;
}

/*
 * NPopenmpi at one size: its latency in us (half a round trip, as NetPIPE
 * prints it), or 0 when it did not run.
 */
double npompi_at(uint64_t size)
{
	unsigned long long b;
	char file[64], line[256];
	double mbps, sec = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/tmp/zcbench-ompi-at.%d.out",
		 (int)getpid());
	if (run_npompi(size, size, file, NULL) == 0 &&
	    (f = fopen(file, "r")) != NULL) {
		if (!fgets(line, sizeof(line), f) ||
		    sscanf(line, "%llu %lf %lf", &b, &mbps, &sec) != 3 ||
		    b != size || sec <= 0)
			sec = 0;
		fclose(f);
	}
	unlink(file);
	return sec * 1e6;
}

/*
 * NPopenmpi runs before zcbench and after it; per size the faster of
 * the two runs is the reference, so that a slow phase of the machine
 * during one of them cannot flatter zcbench.
 */
void npompi_before(uint64_t min, uint64_t max)
{
	snprintf(ompi_first, sizeof(ompi_first),
		 "/tmp/zcbench-ompi-first.%d.out", (int)getpid());
	ompi_first_owner = getpid();
	atexit(ompi_first_unlink);	/* also on a die() */
	ompi_first_ok = run_npompi(min, max, ompi_first, NULL) == 0;
}

/*
 * perftest's ib_send_lat (half round trip, t_avg) or ib_write_bw
 * (streaming, BW average) over the RDMA device the verbs transport uses,
 * one run per size from min to max (powers of two, iters iterations);
 * written as bytes,MB/s CSV to out. Server and client both run here.
 */
static int run_perftest(const char *tool, uint64_t min, uint64_t max,
			unsigned int iters, const char *out, bool emulated)
{
	char cmd[512], c2[1024], line[512], raw[300];
	struct zcr_env_val dv, gv;
	const char *dev, *gid;
	bool lat = strstr(tool, "lat") != NULL;
	unsigned long long b, n;
	uint64_t size;
	double v[8] = { 0 };
	int port, k, rows = 0;
	FILE *f, *o;
	pid_t srv;

	/* The device and GID the transport uses (it checked them). */
	__zcr_env_get(ZCR_ENV_VERBS_DEV, true, &dv);
	__zcr_env_get(ZCR_ENV_VERBS_GID, true, &gv);
	dev = dv.set ? dv.s : NULL;
	gid = gv.set ? gv.s : NULL;
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd))
		return -ENOENT;
	o = fopen(out, "w");
	if (!o)
		return -errno;
	printf("\nreference: perftest %s over the same RDMA device, %u "
	       "iterations%s\n", tool, iters, emulated ? " (EMULATED timings: "
	       "soft-RoCE under emulation)" : "");
	printf("%9s %11s %10s\n", "size", lat ? "latency_us" : "", "MB/s");
	for (size = min; size <= max; size *= 2) {
		port = free_port();
		snprintf(raw, sizeof(raw), "%s.raw", out);
		snprintf(cmd, sizeof(cmd), "%s%s -x %s -s %llu -n %u -F -p %d",
			 dev ? "-d " : "", dev ? dev : "", gid ? gid : "1",
			 (unsigned long long)size, iters, port);
		fflush(stdout);
		srv = fork();
		if (srv == 0) {
			if (!freopen("/dev/null", "w", stdout) ||
			    !freopen("/dev/null", "w", stderr))
				_exit(127);
			execl("/bin/sh", "sh", "-c", "exec \"$0\" $1", tool,
			      cmd, (char *)NULL);
			_exit(127);
		}
		usleep(300000);
		/* perftest has no time limit of its own: a lost packet hangs it. */
		snprintf(c2, sizeof(c2), "timeout 120 %s %s 127.0.0.1 >%s 2>&1",
			 tool, cmd, raw);
		k = system(c2);
		for (n = 0; n < 50 && waitpid(srv, NULL, WNOHANG) == 0; n++)
			usleep(100000);
		if (n == 50) {
			kill(srv, SIGKILL);
			waitpid(srv, NULL, 0);
		}
		f = k ? NULL : fopen(raw, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, " %llu %llu %lf %lf %lf %lf", &b, &n,
				   &v[0], &v[1], &v[2], &v[3]) < (lat ? 6 : 5) ||
			    b != size)
				continue;
			/*
			 * lat: t_min t_max t_typical t_avg (the mean of one
			 * run; zcbench's own is its fastest trial's mean);
			 * bw: peak average
			 */
			if (lat) {
				printf("%9llu %11.2f %10.1f\n", b, v[3],
				       b / v[3]);
				fprintf(o, "%llu,%.1f\n", b, b / v[3]);
			} else {
				printf("%9llu %11s %10.1f\n", b, "", v[1]);
				fprintf(o, "%llu,%.1f\n", b, v[1]);
			}
			rows++;
		}
		if (f)
			fclose(f);
		unlink(raw);
	}
	fclose(o);
	return rows ? 0 : -EIO;
}

static void print_np(const char *file, const char *what, bool emulated);

static void print_nptcp(const char *file, bool emulated)
{
	print_np(file, "NetPIPE NPtcp over the same loopback", emulated);
}

static void print_np(const char *file, const char *what, bool emulated)
{
	unsigned long long bytes;
	double mbps, secs;
	FILE *f = fopen(file, "r");

	if (!f)
		return;
	printf("\nreference: %s%s\n", what,
	       emulated ? " (EMULATED timings)" : "");
	printf("%9s %11s %10s\n", "size", "latency_us", "MB/s");
	while (fscanf(f, "%llu %lf %lf", &bytes, &mbps, &secs) == 3)
		if ((bytes & (bytes - 1)) == 0)
			printf("%9llu %11.1f %10.1f\n", bytes, secs * 1e6,
			       (double)bytes / (secs * 1e6));
	fclose(f);
}

/* NPtcp's output (bytes, Mbps, seconds) as CSV (bytes, MB/s). */
int nptcp_csv(const char *np, const char *out)
{
	unsigned long long bytes;
	double mbps, secs;
	FILE *f = fopen(np, "r"), *o;

	if (!f)
		return -errno;
	o = fopen(out, "w");
	if (!o) {
		fclose(f);
		return -errno;
	}
	while (fscanf(f, "%llu %lf %lf", &bytes, &mbps, &secs) == 3)
		fprintf(o, "%llu,%.1f\n", bytes, (double)bytes / (secs * 1e6));
	fclose(f);
	fclose(o);
	return 0;
}

/*
 * The reference runs after zcbench's own (--nptcp, --npopenmpi,
 * --npopenmpi-layer, --perftest): each prints its table and becomes a
 * line of the plot. NPtcp's output for the plot, or NULL.
 */
const char *run_refs(const struct ref_opts *r)
{
	static char npbuf[64], ompibuf[64];
	uint64_t min = r->min, max = r->max;
	unsigned int max_iters = r->iters;
	const char *csv = r->csv, *npfile = r->npfile;
	const char *ompifile = r->ompifile, *layer = r->layer;
	bool emulated = r->emulated;
	int m, o;

	if (r->nptcp) {
		if (!npfile) {
			snprintf(npbuf, sizeof(npbuf), "/tmp/zcbench-np.%d.out",
				 (int)getpid());
			npfile = npbuf;
		}
		if (run_nptcp_unbound(min, max, npfile) == 0)
			print_nptcp(npfile, emulated);
		else
			printf("zcbench: NPtcp not available: no reference line\n");
	}
	if (r->npompi) {
		if (!ompifile) {
			snprintf(ompibuf, sizeof(ompibuf),
				 "/tmp/zcbench-ompi.%d.out", (int)getpid());
			ompifile = ompibuf;
		}
		if (run_npompi(min, max, ompifile, NULL) == 0) {
			int mret = ompi_first_ok ?
				   merge_np(ompi_first, ompifile, ompifile) :
				   -ENOENT;

			if (!mret)
				printf("\nNPopenmpi ran before and after "
				       "zcbench: per size the faster run\n");
			else
				printf("\nzcbench: NPopenmpi's run before "
				       "zcbench %s (%s): the reference is the "
				       "run after it only\n", ompi_first_ok ?
				       "could not be merged" : "failed",
				       strerror(-mret));
			ompi_first_unlink();
			print_np(ompifile, "NetPIPE NPopenmpi (Open MPI, "
				 "shared-memory BTL vader, CMA)", emulated);
			ompi_ref = ompifile;
		} else {
			printf("zcbench: NPopenmpi not available: no Open MPI "
			       "reference line\n");
		}
	}
	if (layer) {
		static char lfile[64], lcsv[80];

		snprintf(lfile, sizeof(lfile), "/tmp/zcbench-ompi-zc.%d.out",
			 (int)getpid());
		if (run_npompi(min, max, lfile, layer) == 0 && nrefs < 8) {
			print_np(lfile, "NetPIPE NPopenmpi over libzcrecv-mpi "
				 "(LD_PRELOAD, ZCRECV_SHM=1)", emulated);
			snprintf(lcsv, sizeof(lcsv), "%s.csv", lfile);
			if (nptcp_csv(lfile, lcsv) == 0) {
				refs[nrefs].csv = lcsv;
				refs[nrefs++].title = "NPopenmpi over "
						      "libzcrecv-mpi";
			}
		} else {
			printf("zcbench: NPopenmpi over %s failed: no such "
			       "reference line\n", layer);
		}
	}
	if (r->perftest) {
		static const char *const tools[] = { "ib_send_lat",
						     "ib_write_bw" };
		static char files[2][96];

		for (m = 0; m < 2; m++) {
			snprintf(files[m], sizeof(files[m]),
				 "/tmp/zcbench-%s.%d.csv", tools[m],
				 (int)getpid());
			unbind();
			o = run_perftest(tools[m], min, max, max_iters,
					 files[m], emulated);
			rebind();
			if (o) {
				printf("zcbench: %s not available or failed: "
				       "no reference line\n", tools[m]);
				continue;
			}
			if (csv && !strcmp(csv, "-")) {
				FILE *f = fopen(files[m], "r");
				char line[128];

				printf("zcbench-ref-begin %s\n", tools[m]);
				while (f && fgets(line, sizeof(line), f))
					fputs(line, stdout);
				printf("zcbench-ref-end\n");
				if (f)
					fclose(f);
			}
			if (nrefs < 8) {
				refs[nrefs].csv = files[m];
				refs[nrefs++].title = tools[m];
			}
		}
	}
	return r->nptcp ? npfile : NULL;
}
