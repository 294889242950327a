// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * job.c - a context wired up by the job's launcher (zcr_ctx_create_job()):
 * rank and size from the launcher, a job secret from rank 0, every rank's
 * listening address exchanged, connections dialled on first use.
 *
 * Three ways to exchange (Documentation/mpi.md, "Wire-up"):
 *   - PMIx (Open MPI's mpirun, srun --mpi=pmix, prterun): put, fence, get.
 *     libpmix is opened at run time, so the library does not depend on it.
 *   - the environment: ZCRECV_RANK/ZCRECV_SIZE (or PMI_RANK/PMI_SIZE,
 *     OMPI_COMM_WORLD_*, SLURM_PROCID/SLURM_NTASKS) and a directory
 *     ZCRECV_JOB_DIR all ranks see, one file per rank.
 *   - the caller's allgather (struct zcr_job_attr), e.g. the MPI's own.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#if defined(__has_include)
#if __has_include(<pmix.h>)
#include <pmix.h>
#define ZCR_HAVE_PMIX	1
#endif
#endif

#define JOB_SLOT	256	/* bytes per rank in an exchange */

enum job_how { JOB_PMIX = 1, JOB_DIR, JOB_CALLBACK };

struct zcr_job {
	int rank, size;
	int how;
	char **addr;			/* per rank: "HOST:PORT" */
	struct zcr_ep **ep;		/* per rank: the endpoint we dialled */
	pthread_mutex_t lock;		/* ep[] */
	/*
	 * Per rank: ep[rank] once zcr_ctx_job_ep() can never change it again,
	 * read without a lock (NULL: take the locks and look).
	 */
	struct zcr_ep **settled;
	/* JOB_DIR */
	char dir[PATH_MAX - 64];
	int wait_ms;
	/* JOB_CALLBACK */
	struct zcr_job_attr cb;
#ifdef ZCR_HAVE_PMIX
	void *dl;
	pmix_proc_t me;
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
	pmix_status_t (*fini)(const pmix_info_t *, size_t);
	pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t *, size_t,
			       const pmix_info_t *, size_t);
	pmix_status_t (*get)(const pmix_proc_t *, const char *,
			     const pmix_info_t *, size_t, pmix_value_t **);
	void (*vfree)(pmix_value_t *);
	const char *(*errstr)(pmix_status_t);
	bool inited;
#endif
};

static int job_err(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ZCRECV_QUIET=1 (a bad value is said by zcr_ctx_create()). */
static bool job_quiet(void)
{
	struct zcr_env_val v;

	__zcr_env_get(ZCR_ENV_QUIET, true, &v);
	return v.u;
}

static int job_err(int err, const char *fmt, ...)
{
	va_list ap;

	if (job_quiet())
		return err;
	fprintf(stderr, "zcrecv: job wire-up: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return err;
}

/* ---- PMIx ----------------------------------------------------------- */

#ifdef ZCR_HAVE_PMIX
static int pmix_open(struct zcr_job *j)
{
	pmix_value_t *v = NULL;
	pmix_proc_t wild;
	pmix_status_t rc;

	j->dl = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (!j->dl)
		return job_err(-ENOENT, "PMIx launcher found (PMIX_NAMESPACE "
			       "set) but libpmix.so.2 cannot be loaded: %s "
			       "(apt-get install libpmix2)", dlerror());
#define SYM(f, n) (*(void **)&j->f = dlsym(j->dl, n))
	if (!SYM(init, "PMIx_Init") || !SYM(fini, "PMIx_Finalize") ||
	    !SYM(put, "PMIx_Put") || !SYM(commit, "PMIx_Commit") ||
	    !SYM(fence, "PMIx_Fence") || !SYM(get, "PMIx_Get") ||
	    !SYM(vfree, "PMIx_Value_destruct") ||
	    !SYM(errstr, "PMIx_Error_string"))
		return job_err(-ENOENT, "libpmix.so.2 lacks %s", dlerror());
#undef SYM
	rc = j->init(&j->me, NULL, 0);
	if (rc != PMIX_SUCCESS)
		return job_err(-ECONNREFUSED, "PMIx_Init failed: %s (is "
			       "the PMIx server of the launcher running?)",
			       j->errstr(rc));
	j->inited = true;
	memset(&wild, 0, sizeof(wild));
	memcpy(wild.nspace, j->me.nspace, sizeof(wild.nspace));
	wild.rank = PMIX_RANK_WILDCARD;
	rc = j->get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v || v->type != PMIX_UINT32)
		return job_err(-EPROTO, "PMIx: no job size (%s)",
			       j->errstr(rc));
	j->rank = (int)j->me.rank;
	j->size = (int)v->data.uint32;
	j->vfree(v);
	free(v);
	return 0;
}

static int pmix_xchg(struct zcr_job *j, const char *key, const char *mine,
		     bool only0, char *all)
{
	pmix_value_t val, *v;
	pmix_info_t info;
	pmix_proc_t p;
	pmix_status_t rc;
	int r;

	if (!only0 || j->rank == 0) {
		memset(&val, 0, sizeof(val));
		val.type = PMIX_STRING;
		val.data.string = (char *)mine;
		rc = j->put(PMIX_GLOBAL, key, &val);
		if (rc == PMIX_SUCCESS)
			rc = j->commit();
		if (rc != PMIX_SUCCESS)
			return job_err(-EPROTO, "PMIx_Put %s: %s", key,
				       j->errstr(rc));
	}
	memset(&info, 0, sizeof(info));
	snprintf(info.key, sizeof(info.key), "%s", PMIX_COLLECT_DATA);
	info.value.type = PMIX_BOOL;
	info.value.data.flag = true;
	rc = j->fence(NULL, 0, &info, 1);
	if (rc != PMIX_SUCCESS)
		return job_err(-EPROTO, "PMIx_Fence: %s", j->errstr(rc));
	for (r = 0; r < (only0 ? 1 : j->size); r++) {
		memset(&p, 0, sizeof(p));
		memcpy(p.nspace, j->me.nspace, sizeof(p.nspace));
		p.rank = (pmix_rank_t)r;
		v = NULL;
		rc = j->get(&p, key, NULL, 0, &v);
		if (rc != PMIX_SUCCESS || !v || v->type != PMIX_STRING ||
		    !v->data.string ||
		    strlen(v->data.string) >= JOB_SLOT) {
			if (v) {
				j->vfree(v);
				free(v);
			}
			return job_err(-EPROTO, "PMIx_Get %s of rank %d: %s",
				       key, r, j->errstr(rc));
		}
		snprintf(all + (size_t)r * JOB_SLOT, JOB_SLOT, "%s",
			 v->data.string);
		j->vfree(v);
		free(v);
	}
	return 0;
}
#endif

/* ---- the environment and a shared directory ------------------------- */

/* A number in [lo, INT_MAX] from var, or -1 when unset or bad. */
static int env_int(const char *var, int lo)
{
	const char *v = getenv(var);
	char *end;
	long n;

	if (!v || !*v)
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > INT_MAX)
		return -1;
	return (int)n;
}

/*
 * Rank and size from the first pair of variables that is set: ours,
 * parsed already (a bad one was said), else a launcher's.
 */
static int env_rank(struct zcr_job *j, const struct zcr_env_set *env)
{
	static const char *const vars[][2] = {
		{ "PMI_RANK", "PMI_SIZE" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
		{ "SLURM_PROCID", "SLURM_NTASKS" },
	};
	unsigned int i;
	char want[48];

	if (env->v[ZCR_ENV_RANK].set) {
		j->rank = (int)env->v[ZCR_ENV_RANK].u;
		j->size = env->v[ZCR_ENV_SIZE].set ?
			  (int)env->v[ZCR_ENV_SIZE].u : -1;
		if (j->size < 1)
			return __zcr_env_bad(ZCR_ENV_SIZE, "",
					     "a size with ZCRECV_RANK",
					     job_quiet());
		snprintf(want, sizeof(want), "a rank below ZCRECV_SIZE=%d",
			 j->size);
		if (j->rank >= j->size)
			return __zcr_env_bad(ZCR_ENV_RANK,
					     env->v[ZCR_ENV_RANK].s, want,
					     job_quiet());
		return 0;
	}
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (!getenv(vars[i][0]))
			continue;
		j->rank = env_int(vars[i][0], 0);
		j->size = env_int(vars[i][1], 1);
		if (j->rank < 0 || j->size < 1 || j->rank >= j->size)
			return job_err(-EINVAL, "%s=%s, %s=%s: expected a rank "
				       "below a size", vars[i][0],
				       getenv(vars[i][0]), vars[i][1],
				       getenv(vars[i][1]) ?: "(unset)");
		return 0;
	}
	return -ENOENT;
}

static int read_file(const char *path, char *out)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, out, JOB_SLOT - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = 0;
	return (int)n;
}

/*
 * Write ours as dir/zcrecv-KEY-RANK (complete, then linked into place:
 * readers never see half a file; an existing one is a stale job), then
 * wait for the others'.
 */
static int dir_xchg(struct zcr_job *j, const char *key, const char *mine,
		    bool only0, char *all)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct timespec t0, t;
	int r, fd, n, ret;

	if (!only0 || j->rank == 0) {
		snprintf(path, sizeof(path), "%s/zcrecv-%s-%d", j->dir, key,
			 j->rank);
		snprintf(tmp, sizeof(tmp), "%s/.zcrecv-%s-%d.%d", j->dir, key,
			 j->rank, (int)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return job_err(-errno, "cannot write %s: %s", tmp,
				       strerror(errno));
		n = (int)strlen(mine);
		ret = write(fd, mine, (size_t)n) == n ? 0 : -EIO;
		close(fd);
		if (!ret && link(tmp, path))
			ret = -errno;
		unlink(tmp);
		if (ret == -EEXIST)
			return job_err(ret, "%s exists: ZCRECV_JOB_DIR must be "
				       "a fresh directory for each job", path);
		if (ret)
			return job_err(ret, "cannot write %s: %s", path,
				       strerror(-ret));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (r = 0; r < (only0 ? 1 : j->size); r++) {
		snprintf(path, sizeof(path), "%s/zcrecv-%s-%d", j->dir, key, r);
		while ((ret = read_file(path, all + (size_t)r * JOB_SLOT)) ==
		       -ENOENT) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000 +
			    (t.tv_nsec - t0.tv_nsec) / 1000000 > j->wait_ms)
				return job_err(-ETIMEDOUT, "rank %d did not "
					       "write %s within %d ms", r,
					       path, j->wait_ms);
			usleep(5000);
		}
		if (ret <= 0)
			return job_err(ret ? ret : -EPROTO, "cannot read %s",
				       path);
	}
	return 0;
}

/* ---- one exchange, whatever carries it ------------------------------ */

static int xchg(struct zcr_job *j, const char *key, const char *mine,
		bool only0, char *all)
{
	char slot[JOB_SLOT];
	int ret;

	switch (j->how) {
#ifdef ZCR_HAVE_PMIX
	case JOB_PMIX:
		return pmix_xchg(j, key, mine, only0, all);
#endif
	case JOB_DIR:
		return dir_xchg(j, key, mine, only0, all);
	default:
		memset(slot, 0, sizeof(slot));
		snprintf(slot, sizeof(slot), "%s", mine);
		ret = j->cb.allgather(slot, all, JOB_SLOT, j->cb.arg);
		if (ret)
			return job_err(ret < 0 ? ret : -EPROTO, "the "
				       "allgather of %s failed (%d)", key,
				       ret);
		for (ret = 0; ret < j->size; ret++)
			all[(size_t)ret * JOB_SLOT + JOB_SLOT - 1] = 0;
		return 0;
	}
}

/*
 * The host others reach us at: ZCRECV_JOB_HOST (v), else the address the
 * default route leaves from (a UDP socket connected to a documentation
 * address sends nothing), else loopback.
 */
static void job_host(const char *v, char *out, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
	socklen_t sl = sizeof(a);
	int fd;

	if (v && *v) {
		snprintf(out, n, "%s", v);
		return;
	}
	snprintf(out, n, "127.0.0.1");
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr);
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &sl))
		inet_ntop(AF_INET, &a.sin_addr, out, (socklen_t)n);
	close(fd);
}

void __zcr_job_free(struct zcr_job *j)
{
	int r;

	if (!j)
		return;
	for (r = 0; j->addr && r < j->size; r++)
		free(j->addr[r]);
	free(j->addr);
	free(j->ep);
	free(j->settled);
#ifdef ZCR_HAVE_PMIX
	if (j->inited)
		j->fini(NULL, 0);
	/* libpmix stays loaded: the MPI may be using it too. */
#endif
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* How this job exchanges; rank and size set. */
static int job_method(struct zcr_job *j, const struct zcr_job_attr *ja,
		      const struct zcr_env_set *env)
{
	static const char *const hows[] = { NULL, "pmix", "env" };
	const char *how = hows[env->v[ZCR_ENV_WIREUP].u];
	const char *dir = env->v[ZCR_ENV_JOB_DIR].s;
	bool pmix = getenv("PMIX_NAMESPACE") != NULL;
	int ret;

	if (ja && ja->allgather) {
		if (ja->rank < 0 || ja->size < 1 || ja->rank >= ja->size)
			return -EINVAL;
		j->how = JOB_CALLBACK;
		j->cb = *ja;
		j->rank = ja->rank;
		j->size = ja->size;
		return 0;
	}
	if (how && !strcmp(how, "env"))
		pmix = false;
	if (pmix || (how && !strcmp(how, "pmix"))) {
#ifdef ZCR_HAVE_PMIX
		if (!getenv("PMIX_NAMESPACE"))
			return job_err(-ENOENT, "ZCRECV_WIREUP=pmix but no PMIx "
				       "server: PMIX_NAMESPACE is unset (start "
				       "the job with a PMIx launcher: Open "
				       "MPI's mpirun, srun --mpi=pmix, "
				       "prterun)");
		j->how = JOB_PMIX;
		return pmix_open(j);
#else
		return job_err(-EOPNOTSUPP, "PMIx launcher found but this "
			       "libzcrecv was built without pmix.h "
			       "(libpmix-dev); use ZCRECV_WIREUP=env");
#endif
	}
	ret = env_rank(j, env);
	if (ret == -ENOENT || (!ret && !dir))
		return job_err(-ENOENT, "no PMIx server (PMIX_NAMESPACE is "
			       "unset: not started by a PMIx launcher such as "
			       "Open MPI's mpirun, srun --mpi=pmix or "
			       "prterun), and no environment fallback "
			       "(ZCRECV_JOB_DIR with ZCRECV_RANK/ZCRECV_SIZE "
			       "or PMI_RANK/PMI_SIZE)");
	if (ret)
		return ret;
	j->how = JOB_DIR;
	snprintf(j->dir, sizeof(j->dir), "%s", dir);
	j->wait_ms = (int)env->v[ZCR_ENV_JOB_TIMEOUT_MS].u;
	return 0;
}

/* A fresh secret: 32 random bytes as 64 hex digits. */
static int new_secret(char out[65])
{
	unsigned char b[32];
	int i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	explicit_bzero(b, sizeof(b));
	return 0;
}

int zcr_ctx_create_job(const struct zcr_ctx_attr *attr, size_t attr_size,
		       const struct zcr_job_attr *ja, size_t ja_size,
		       struct zcr_ctx **out)
{
	char mine[JOB_SLOT], secret[65], listen[JOB_SLOT], *all = NULL;
	struct zcr_env_set env;
	struct zcr_env_val env_secret;
	struct zcr_ctx_attr a;
	struct zcr_ctx *ctx = NULL;
	struct zcr_job *j;
	int ret, port, r;

	if (!out || (attr && attr_size < offsetof(struct zcr_ctx_attr,
						  job_secret)) ||
	    (ja && ja_size < sizeof(*ja)))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	if (attr)
		memcpy(&a, attr, attr_size < sizeof(a) ? attr_size : sizeof(a));
	/*
	 * The job's variables, and the secret's before rank 0 would draw
	 * one for nothing: every bad one is said, whoever is quiet, since
	 * no context exists yet to fail later and name them.
	 */
	ret = __zcr_env_load(&env, ZCR_ENV_JOB, job_quiet());
	if (__zcr_env_get(ZCR_ENV_JOB_SECRET, job_quiet(), &env_secret) || ret)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	ret = job_method(j, ja, &env);
	if (ret)
		goto err;
	ret = -ENOMEM;
	all = calloc((size_t)j->size, JOB_SLOT);
	j->addr = calloc((size_t)j->size, sizeof(*j->addr));
	j->ep = calloc((size_t)j->size, sizeof(*j->ep));
	j->settled = calloc((size_t)j->size, sizeof(*j->settled));
	if (!all || !j->addr || !j->ep || !j->settled)
		goto err;

	/* Round 1: the job secret, rank 0's, unless the caller has one. */
	if (!a.job_secret && !env_secret.set) {
		ret = j->rank == 0 ? new_secret(secret) : 0;
		if (ret)
			goto err;
		ret = xchg(j, "secret", j->rank == 0 ? secret : "", true, all);
		if (ret)
			goto err;
		if (strlen(all) != 64) {
			ret = job_err(-EPROTO, "rank 0 sent no job secret");
			goto err;
		}
		memcpy(secret, all, 65);
		explicit_bzero(all, JOB_SLOT);
		a.job_secret = secret;
	}
	a.rank = j->rank;
	ret = zcr_ctx_create_sized(&a, sizeof(a), &ctx);
	explicit_bzero(secret, sizeof(secret));
	if (ret)
		goto err;
	pthread_mutex_lock(&ctx->lock);
	ctx->comm_ids = true;
	ctx->job = j;
	pthread_mutex_unlock(&ctx->lock);

	/* Round 2: where each rank listens. */
	snprintf(listen, sizeof(listen), "%s",
		 env.v[ZCR_ENV_JOB_LISTEN].s ? : "0.0.0.0:0");
	port = zcr_ctx_listen(ctx, listen);
	if (port < 0) {
		ret = job_err(port, "cannot listen on %s: %s", listen,
			      strerror(-port));
		goto err_ctx;
	}
	job_host(env.v[ZCR_ENV_JOB_HOST].s, mine, sizeof(mine) - 16);
	r = (int)strlen(mine);
	snprintf(mine + r, sizeof(mine) - (size_t)r, ":%d", port);
	ret = xchg(j, "addr", mine, false, all);
	if (ret)
		goto err_ctx;
	for (r = 0; r < j->size; r++) {
		j->addr[r] = strdup(all + (size_t)r * JOB_SLOT);
		if (!j->addr[r] || !*j->addr[r]) {
			ret = job_err(j->addr[r] ? -EPROTO : -ENOMEM,
				      "no address for rank %d", r);
			goto err_ctx;
		}
	}
	free(all);
	*out = ctx;
	return 0;

err_ctx:
	zcr_ctx_destroy(ctx);	/* frees j too */
	free(all);
	return ret;
err:
	free(all);
	__zcr_job_free(j);
	return ret;
}

int zcr_ctx_job(struct zcr_ctx *ctx, int *rank, int *size)
{
	if (!ctx || !ctx->job)
		return -EINVAL;
	if (rank)
		*rank = ctx->job->rank;
	if (size)
		*size = ctx->job->size;
	return 0;
}

/*
 * An open connection rank dialled to us that nobody took yet: marked
 * returned, so that zcr_ep_accept() does not hand it out and the reaper
 * does not free it once closed (it is the job's now).
 */
static struct zcr_ep *take_accepted_locked(struct zcr_ctx *ctx, int rank)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->accepted && !ep->returned && ep->rank == rank &&
		    ep->state == ZCR_EP_OPEN) {
			ep->returned = true;
			return ep;
		}
	}
	return NULL;
}

/*
 * May the rule of zcr_ctx_job_ep() (below) still move our sends to rank from
 * cur to another connection? Only while cur is one we dialled to a lower
 * rank and it carried nothing yet. Under ctx->lock.
 */
static bool may_move_locked(struct zcr_job *j, int rank, struct zcr_ep *cur)
{
	return !cur || (rank < j->rank && !cur->accepted && !cur->send_via &&
			!cur->send_seq);
}

/*
 * Both directions of a pair on one connection where it can be arranged:
 * on a connection that carries DATA one way only, the receiver's kernel
 * acknowledges every small segment with a segment of its own as soon as
 * it is read (no reply to carry the acknowledgement: TCP's delayed ACK is
 * only for connections that answer), which the sender's kernel then
 * processes too. Between two network namespaces here a ping-pong of
 * 40-byte writes took 15.6-16.2 us a round trip over one connection per
 * direction, 8.6-10.5 over one connection both ways (as Open MPI's TCP
 * BTL has it).
 *
 * The rule (no wire change: an endpoint always carried both ways): we
 * send on a connection the peer dialled when we have none of our own,
 * and the higher rank of a pair also moves its sends to the connection
 * the lower rank dialled when both dialled at once, provided its own has
 * not carried a message yet (ep->send_seq, under ctx->lock, as
 * send_via is followed): each side's messages stay on one connection, in
 * order. If the higher rank sent first, the pair keeps two connections,
 * as before. The connection no longer sent on stays open, idle.
 */
int zcr_ctx_job_ep(struct zcr_ctx *ctx, int rank, unsigned int flags,
		   struct zcr_ep **out)
{
	struct zcr_ep *cur, *peer;
	struct zcr_job *j;
	bool settled = false;
	int ret = 0;

	if (!ctx || !ctx->job || !out || rank < 0 || rank >= ctx->job->size ||
	    flags)
		return -EINVAL;
	j = ctx->job;
	/*
	 * Every send and receive of libzcrecv-mpi asks: once the answer
	 * cannot change, it costs no lock (two pairs of them per message
	 * before, a tenth of the layer's part of a small message).
	 */
	cur = __atomic_load_n(&j->settled[rank], __ATOMIC_ACQUIRE);
	if (cur) {
		*out = cur;
		return 0;
	}
	pthread_mutex_lock(&j->lock);
	if (rank != j->rank) {
		pthread_mutex_lock(&ctx->lock);
		cur = j->ep[rank];
		if (may_move_locked(j, rank, cur)) {
			peer = take_accepted_locked(ctx, rank);
			if (peer && cur)
				cur->send_via = peer;
			if (peer)
				j->ep[rank] = peer;
		}
		settled = !may_move_locked(j, rank, j->ep[rank]);
		pthread_mutex_unlock(&ctx->lock);
	}
	if (!j->ep[rank])
		ret = zcr_ep_connect(ctx, j->addr[rank], &j->ep[rank]);
	if (!ret) {
		*out = j->ep[rank];
		if (settled || rank == j->rank)
			__atomic_store_n(&j->settled[rank], j->ep[rank],
					 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&j->lock);
	return ret;
}

int zcr_job_ep(struct zcr_ctx *ctx, int rank, struct zcr_ep **out)
{
	return zcr_ctx_job_ep(ctx, rank, 0, out);
}
