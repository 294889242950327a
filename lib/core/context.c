// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * context.c - a context (one rank): creation with the environment
 * overrides, statistics, explicit progress and the progress thread.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/probe.h"
#include "core/core.h"
#include "core/sized.h"

#define ZCR_DEFAULT_STAGING	(256ULL << 20)
#define ZCR_DEFAULT_MAX_MSG	(1ULL << 30)
#define ZCR_MIN_POLL		64

/*
 * ZCRECV_QUIET: 1 quiet, 0 not, unset: the attribute. A bad value is said
 * unless the attribute asks for quiet. Or -EINVAL.
 */
static int env_quiet(int attr)
{
	struct zcr_env_val v;

	if (__zcr_env_get(ZCR_ENV_QUIET, attr, &v))
		return -EINVAL;
	return v.set ? (int)v.u : !!attr;
}

/* The backend ZCRECV_BACKEND names, dflt when unset, or -EINVAL (said). */
static int env_backend(const struct zcr_env_val *v, bool quiet, int dflt)
{
	int id;

	if (!v->set)
		return dflt;
	id = __zcr_remap_lookup(v->s);
	if (id < 0)
		return __zcr_env_bad(ZCR_ENV_BACKEND, v->s,
				     __zcr_env_vars[ZCR_ENV_BACKEND].accepts,
				     quiet);
	return id;
}

static bool pred_known(const char *name)
{
	int i;

	for (i = 0; __zcr_pred_names[i]; i++)
		if (!strcmp(name, __zcr_pred_names[i]))
			return true;
	return false;
}

/* An attribute's value, else the variable's if set, else the default. */
static int env_or(const struct zcr_env_val *v, int attr)
{
	return v->set || !attr ? (int)v->u : attr;
}

/* The job secret: the attribute, else ZCRECV_JOB_SECRET, else none. */
static int job_secret(struct zcr_ctx *ctx, const char *attr)
{
	const char *v = attr ? attr : ctx->env.v[ZCR_ENV_JOB_SECRET].s;
	size_t n = v ? strlen(v) : 0;

	/* ZCRECV_JOB_SECRET's length was checked by its parse. */
	if (n > ZCR_SECRET_MAX || (attr && !n))
		return -EINVAL;
	if (n)
		memcpy(ctx->secret, v, n);
	ctx->secret_len = n;
	return 0;
}

/*
 * ZCRECV_PROGRESS_NICE: the thread nicer than its process. A rank pinned
 * to one processor shares it with this thread, and every message the
 * thread lands while the rank computes comes off the computation; a
 * nicer thread still has the processor whenever the rank waits. Linux
 * keeps a nice value per thread. Only ever raised: no privilege needed.
 */
static void progress_nice(struct zcr_ctx *ctx)
{
	int by = (int)ctx->env.v[ZCR_ENV_PROGRESS_NICE].u, now;
	id_t tid = (id_t)syscall(SYS_gettid);

	if (!by)
		return;
	errno = 0;
	now = getpriority(PRIO_PROCESS, tid);
	if (errno)
		return;
	if (setpriority(PRIO_PROCESS, tid, now + by > 19 ? 19 : now + by) &&
	    !ctx->quiet)
		fprintf(stderr, "zcrecv: progress thread: setpriority: %s\n",
			strerror(errno));
}

/* Arm the park's timer to fire at ns (CLOCK_MONOTONIC); 0 disarms it. */
static void park_arm(struct zcr_ctx *ctx, uint64_t ns)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	its.it_value.tv_sec = (time_t)(ns / 1000000000);
	its.it_value.tv_nsec = (long)(ns % 1000000000);
	ctx->park_until = ns;
	/* Cannot fail on our own timerfd with a valid absolute time. */
	(void)timerfd_settime(ctx->park_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void __zcr_park_push_locked(struct zcr_ctx *ctx)
{
	uint64_t now;

	if (!ctx->thread_on)
		return;
	/* The calls so far are in the push: none left for the thread. */
	ctx->app_calls_pushed = ctx->app_calls_seen = ctx->app_calls;
	now = zcr_now_ns();
	/*
	 * Far enough still: nothing to do, no system call, and the calls
	 * come fast enough to read the clock less often. Pushed, the timer
	 * is good for ZCR_PARK_SLACK_NS of calls before the next.
	 */
	if (ctx->park_until >= now + ZCR_PARK_GRACE_NS) {
		if (ctx->park_stride < ZCR_PARK_STRIDE_MAX)
			ctx->park_stride *= 2;
		return;
	}
	park_arm(ctx, now + ZCR_PARK_GRACE_NS + ZCR_PARK_SLACK_NS);
}

/*
 * Sleep until the park's timer fires (or never, disarmed, until someone
 * arms it), the lock dropped meanwhile. Moving the timer while we sleep
 * moves our wake-up with it: nobody has to wake us to say so.
 */
static void park_sleep(struct zcr_ctx *ctx)
{
	uint64_t n;

	pthread_mutex_unlock(&ctx->lock);
	if (read(ctx->park_fd, &n, sizeof(n)) < 0) {
		/* EINTR: the caller looks at the state again. */
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->park_wakes++;
}

static void *progress_thread(void *arg)
{
	struct zcr_ctx *ctx = arg;
	int n;

	progress_nice(ctx);
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->thread_stop) {
		uint64_t now = zcr_now_ns();

		/*
		 * Someone waits in zcr_wait() and drives progress: sleep
		 * with the timer disarmed. The last waiter to leave arms it
		 * (__zcr_park_push_locked(), under the lock we hold now),
		 * so the park ends a grace after that. Nobody else wakes
		 * us: a wake-up per zcr_wait() would cost a system call
		 * and, on a busy machine, the peer's processor.
		 */
		if (ctx->waiters) {
			if (ctx->park_until > now)
				park_arm(ctx, 0);
			ctx->park_until = 0;
			park_sleep(ctx);
			continue;
		}
		/*
		 * The application made calls since the last push that did
		 * not reach the next (fewer than park_stride): another
		 * grace.
		 */
		if (ctx->app_calls != ctx->app_calls_seen) {
			ctx->app_calls_seen = ctx->app_calls;
			/* They came too slowly to push: push more often. */
			if (ctx->park_stride > 1)
				ctx->park_stride /= 2;
			if (ctx->park_until < now + ZCR_PARK_GRACE_NS)
				park_arm(ctx, now + ZCR_PARK_GRACE_NS);
		}
		if (now < ctx->park_until) {
			park_sleep(ctx);
			continue;
		}
		ctx->thread_busy = true;
		n = __zcr_progress_locked(ctx, 100);
		ctx->thread_busy = false;
		/*
		 * A pass that did work may have more behind it (a large
		 * message moves a part per pass): the processor first goes
		 * to whoever else wants it. A rank pinned to one processor
		 * computes there while we move its messages, and a pass
		 * after pass without a yield took the processor from its
		 * computation for whole scheduler slices.
		 */
		if (n > 0) {
			pthread_mutex_unlock(&ctx->lock);
			sched_yield();
			pthread_mutex_lock(&ctx->lock);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

/* Are the n bytes at p all zero? */
static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

static int ctx_create(const struct zcr_ctx_attr *attr, struct zcr_ctx **out)
{
	struct zcr_env_set env;
	struct zcr_ctx *ctx;
	const char *pred;
	int ret, backend, quiet;

	if (attr->rank < 0 || attr->policy < 0 ||
	    attr->policy > ZCRECV_POLICY_REMAP || attr->backend < 0 ||
	    attr->backend > ZCRECV_BACKEND_COPY ||
	    attr->handshake_timeout_ms < 0 || attr->progress_timeout_ms < 0 ||
	    attr->max_conns < 0)
		return -EINVAL;
	quiet = env_quiet(attr->quiet);
	if (quiet < 0)
		return quiet;
	/* Every variable a context reads, at once: each bad one is said. */
	ret = __zcr_env_load(&env, ZCR_ENV_CTX, quiet);
	backend = env_backend(&env.v[ZCR_ENV_BACKEND], quiet, attr->backend);
	if (ret || backend < 0)
		return -EINVAL;
	pred = attr->predictor ? attr->predictor : env.v[ZCR_ENV_PREDICTOR].s;
	if (!pred || !*pred)
		pred = "select";
	if (!pred_known(pred))
		return attr->predictor ? -EINVAL :
		       __zcr_env_bad(ZCR_ENV_PREDICTOR, pred,
				     __zcr_env_vars[ZCR_ENV_PREDICTOR].accepts,
				     quiet);

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->quiet = quiet;
	ctx->env = env;
	ret = job_secret(ctx, attr->job_secret);
	if (ret) {
		free(ctx);
		return ret;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
	ctx->park_fd = -1;
	ctx->park_stride = 1;
	ctx->rank = attr->rank;
	ctx->policy = env_or(&env.v[ZCR_ENV_POLICY], attr->policy);
	ctx->max_msg = attr->max_msg ? attr->max_msg : ZCR_DEFAULT_MAX_MSG;
	ctx->staging_limit = attr->staging_bytes ? attr->staging_bytes :
						   ZCR_DEFAULT_STAGING;
	ctx->hs_timeout_ns =
		(uint64_t)env_or(&env.v[ZCR_ENV_HANDSHAKE_TIMEOUT_MS],
				 attr->handshake_timeout_ms) * 1000000;
	ctx->progress_timeout_ns =
		(uint64_t)env_or(&env.v[ZCR_ENV_PROGRESS_TIMEOUT_MS],
				 attr->progress_timeout_ms) * 1000000;
	ctx->max_conns = (unsigned int)env_or(&env.v[ZCR_ENV_MAX_CONNS],
					      attr->max_conns);
	ctx->huge_zones = (bool)env.v[ZCR_ENV_HUGE_ZONES].u;
	/*
	 * Early messages from this size up that would be copied out of
	 * staging wait with the transport for their receive (match.c,
	 * defer()); below it (64 KiB by default) staging them is cheap and
	 * frees the sender's buffer, or socket, early.
	 */
	ctx->defer_min = env.v[ZCR_ENV_DEFER_MIN].u;
	ctx->page = (size_t)sysconf(_SC_PAGESIZE);
	zcr_list_init(&ctx->eps);
	zcr_list_init(&ctx->posted);
	zcr_list_init(&ctx->unexpected);
	zcr_list_init(&ctx->stalled);
	zcr_list_init(&ctx->expects);
	zcr_list_init(&ctx->preqs);
	zcr_list_init(&ctx->acks);
	zcr_list_init(&ctx->peers);
	zcr_list_init(&ctx->mems);
	zcr_list_init(&ctx->done_reqs);
	zcr_list_init(&ctx->free_slots);

	ctx->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->wake_fd < 0) {
		ret = -errno;
		goto err_free;
	}
	ctx->kmod_fd = __zcr_kmod_open(&ctx->kmod);
	if (ctx->kmod_fd < 0)
		ctx->kmod_fd = -1;

	ret = __zcr_remap_setup(ctx, backend);
	if (ret)
		goto err_remap;
	ret = __zcr_transports_init(ctx);
	if (ret)
		goto err_remap;

	ret = __zcr_pf_ctx_init(ctx);
	if (ret)
		goto err_remap;

	ctx->pred = __zcr_pred_create(pred, 0);
	if (!ctx->pred) {
		ret = -EINVAL;
		goto err_remap;
	}
	snprintf(ctx->pred_name, sizeof(ctx->pred_name), "%s", pred);

	if (attr->progress_thread) {
		/* Counts in CLOCK_MONOTONIC, as zcr_now_ns(). */
		ctx->park_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (ctx->park_fd < 0) {
			ret = -errno;
			goto err_pred;
		}
		/* The thread starts by taking the lock: it sees both set. */
		pthread_mutex_lock(&ctx->lock);
		ret = -pthread_create(&ctx->thread, NULL, progress_thread, ctx);
		ctx->thread_on = !ret;
		pthread_mutex_unlock(&ctx->lock);
		if (ret)
			goto err_park;
	}
	*out = ctx;
	return 0;

err_park:
	close(ctx->park_fd);
err_pred:
	__zcr_pred_destroy(ctx->pred);
err_remap:
	__zcr_pf_ctx_fini(ctx);
	__zcr_transports_fini(ctx);
	__zcr_remap_teardown(ctx);
	if (ctx->kmod_fd >= 0)
		close(ctx->kmod_fd);
	close(ctx->wake_fd);
err_free:
	explicit_bzero(ctx->secret, sizeof(ctx->secret));
	free(ctx);
	return ret;
}

int zcr_ctx_create_sized(const struct zcr_ctx_attr *attr, size_t attr_size,
			 struct zcr_ctx **out)
{
	struct zcr_ctx_attr a;

	if (!out || (attr && attr_size < ZCR_ATTR_SIZE_0_1))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	if (attr) {
		if (attr_size > sizeof(a) &&
		    !all_zero((const char *)attr + sizeof(a),
			      attr_size - sizeof(a)))
			return -E2BIG;
		memcpy(&a, attr, attr_size < sizeof(a) ? attr_size : sizeof(a));
	}
	return ctx_create(&a, out);
}

int zcr_ctx_create(const struct zcr_ctx_attr *attr, struct zcr_ctx **out)
{
	return zcr_ctx_create_sized(attr, ZCR_ATTR_SIZE_0_1, out);
}

void zcr_ctx_destroy(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;
	unsigned int i;

	if (!ctx)
		return;
	if (ctx->thread_on) {
		pthread_mutex_lock(&ctx->lock);
		ctx->thread_stop = true;
		/* Parked: its timer fires at once (1 ns is long past). */
		park_arm(ctx, 1);
		pthread_mutex_unlock(&ctx->lock);
		__zcr_wake(ctx);	/* in poll */
		pthread_join(ctx->thread, NULL);
		close(ctx->park_fd);
	}
	/*
	 * Connections first: a transport may have to wait until a peer is
	 * done writing into a receive's buffer (shm.md, "Shared copies")
	 * before that buffer is freed below.
	 */
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_CLOSED)
			continue;
		if (ep->state == ZCR_EP_HANDSHAKE)
			ctx->nhandshake--;
		ep->tp->ep_close(ep, ep->tp_priv);
		ep->state = ZCR_EP_CLOSED;
	}
	/* Pending requests are abandoned, so they are ours to free. */
	__zcr_preqs_fini(ctx);
	__zcr_match_fini(ctx);
	/* So are completed ones zcr_test/zcr_wait never returned. */
	zcr_list_for_each_safe(pos, tmp, &ctx->done_reqs) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req,
						     done_link);

		zcr_list_del(&r->done_link);
		free(r->own);
		free(r);
	}
	for (i = 0; i < ZCR_SPARE_REQS; i++)
		free(ctx->spare_reqs[i]);
	zcr_list_for_each_safe(pos, tmp, &ctx->eps)
		__zcr_ep_free(zcr_container_of(pos, struct zcr_ep, link));
	__zcr_pf_ctx_fini(ctx);
	__zcr_job_free(ctx->job);
	while (ctx->pollsets) {
		struct zcr_pollset *ps = ctx->pollsets;

		ctx->pollsets = ps->next;
		free(ps->fds);
		free(ps);
	}
	__zcr_staging_fini(ctx);
	zcr_list_for_each_safe(pos, tmp, &ctx->mems) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		munmap(m->addr, m->len);
		free(m);
	}
	__zcr_remap_teardown(ctx);
	__zcr_transports_fini(ctx);
	__zcr_pred_destroy(ctx->pred);
	if (ctx->kmod_fd >= 0)
		close(ctx->kmod_fd);
	close(ctx->wake_fd);
	pthread_cond_destroy(&ctx->cond);
	pthread_mutex_destroy(&ctx->lock);
	explicit_bzero(ctx->secret, sizeof(ctx->secret));
	free(ctx);
}

int zcr_ctx_stats_sized(struct zcr_ctx *ctx, struct zcr_stats *out,
			size_t size)
{
	struct zcr_stats full, *st = &full;

	if (!ctx || !out || size < ZCR_STATS_SIZE_0_1)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	*st = ctx->st;
	st->staging_limit = ctx->staging_limit;
	st->policy = ctx->policy;
	st->backend = ctx->be[0].ops->id;
	st->min_remap_pages = __zcr_remap_min_pages(ctx);
	st->copy_ns_per_page = ctx->be[0].copy_ns;
	st->remap_ns_per_page = ctx->be[0].remap_ns;
	snprintf(st->predictor, sizeof(st->predictor), "%s", ctx->pred_name);
	snprintf(st->backend_name, sizeof(st->backend_name), "%s",
		 ctx->be[0].ops->name);
	pthread_mutex_unlock(&ctx->lock);
	zcr_sized_out(out, size, st, sizeof(full));
	return 0;
}

int zcr_ctx_stats(struct zcr_ctx *ctx, struct zcr_stats *st)
{
	return zcr_ctx_stats_sized(ctx, st, ZCR_STATS_SIZE_0_1);
}

int zcr_ctx_set_policy(struct zcr_ctx *ctx, int policy)
{
	if (!ctx || policy < ZCRECV_POLICY_AUTO || policy > ZCRECV_POLICY_REMAP)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ctx->policy = policy;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/*
 * A poll set with room for n entries: an idle one of ours, grown if need
 * be. Only a new connection or a new concurrent poller allocates.
 */
static struct zcr_pollset *pollset_get_locked(struct zcr_ctx *ctx,
					      unsigned int n)
{
	struct zcr_pollset *ps = ctx->pollsets;
	struct pollfd *fds;
	unsigned int cap;

	if (ps) {
		ctx->pollsets = ps->next;
	} else {
		ps = calloc(1, sizeof(*ps));
		if (!ps)
			return NULL;
	}
	if (ps->cap < n) {
		cap = ps->cap ? ps->cap : ZCR_MIN_POLL;
		while (cap < n)
			cap *= 2;
		fds = realloc(ps->fds, cap * sizeof(*fds));
		if (!fds) {
			ps->next = ctx->pollsets;
			ctx->pollsets = ps;
			return NULL;
		}
		ps->fds = fds;
		ps->cap = cap;
	}
	return ps;
}

static void pollset_put_locked(struct zcr_ctx *ctx, struct zcr_pollset *ps)
{
	ps->next = ctx->pollsets;
	ctx->pollsets = ps;
}

/*
 * One pass over everything that needs no waiting: stalled arrivals that
 * got room, every transport, handshake deadlines. Match never calls back
 * into a transport: a delivery that frees staging only marks the stalled
 * arrivals for the drain here.
 */
static int work_locked(struct zcr_ctx *ctx)
{
	int i, r, n = 0;

	/*
	 * A waiting thread runs a pass per look at its connections: what
	 * has nothing to do is not called (stalled arrivals, handshakes,
	 * acknowledgements are rare; a small message's round trip is a few
	 * thousand instructions, and these calls were a tenth of it).
	 */
	__zcr_ep_reap_locked(ctx);
	if (!zcr_list_empty(&ctx->stalled))
		n = __zcr_match_drain_locked(ctx);
	for (i = 0; i < ctx->ntr; i++) {
		r = ctx->tr[i].ops->progress(ctx, ctx->tr[i].priv);
		if (r > 0)
			n += r;
	}
	if (ctx->nhandshake)
		n += __zcr_ep_expire_handshakes_locked(ctx);
	if (ctx->drain_pending)
		n += __zcr_match_drain_locked(ctx);
	if (!zcr_list_empty(&ctx->acks))
		__zcr_ep_acks_flush_locked(ctx);
	return n;
}

/*
 * A thread's own wake-up eventfd, for the request it waits for in
 * zcr_wait(). Closed when the thread exits (the key's destructor; not
 * once the library is unloaded: then it stays open). A child of fork()
 * closes the forking thread's, the parent's, and makes its own if needed.
 */
static pthread_key_t thread_wake_key;
static pthread_once_t thread_wake_once = PTHREAD_ONCE_INIT;
static bool thread_wake_keyed;
static __thread int thread_wake = -1;

static void thread_wake_close(void *v)
{
	close((int)(intptr_t)v - 1);
	thread_wake = -1;	/* a later key destructor may call us */
}

/* The child's only thread is the one that forked: its fd is the parent's. */
static void thread_wake_forked(void)
{
	if (thread_wake < 0)
		return;
	close(thread_wake);
	thread_wake = -1;
	if (thread_wake_keyed)
		pthread_setspecific(thread_wake_key, NULL);
}

static void thread_wake_setup(void)
{
	thread_wake_keyed = !pthread_key_create(&thread_wake_key,
						thread_wake_close);
	(void)pthread_atfork(NULL, NULL, thread_wake_forked);
}

/* No destructor of ours left behind in threads if the library goes. */
__attribute__((destructor)) static void thread_wake_unload(void)
{
	if (thread_wake_keyed)
		pthread_key_delete(thread_wake_key);
	thread_wake_keyed = false;
}

static int thread_wake_fd_if_any(void)
{
	return thread_wake;
}

int __zcr_thread_wake_fd(void)
{
	int fd = thread_wake_fd_if_any();

	if (fd >= 0)
		return fd;
	pthread_once(&thread_wake_once, thread_wake_setup);
	if (!thread_wake_keyed)
		return -1;	/* could not be closed at the thread's exit */
	thread_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (thread_wake >= 0 &&
	    pthread_setspecific(thread_wake_key,
				(void *)(intptr_t)(thread_wake + 1))) {
		close(thread_wake);	/* it would outlive the thread */
		thread_wake = -1;
	}
	return thread_wake;
}

/*
 * Each transport's entries after a poll (revents 0 where it did not run or
 * ended without events): every poll_fill() is followed by its poll_done(),
 * for the first filled transports (those asked before one found work).
 */
static void polled_locked(struct zcr_ctx *ctx, const struct pollfd *pfd,
			  const unsigned int *cnt, int filled)
{
	unsigned int nfd = 0;
	int i;

	for (i = 0; i < filled; nfd += cnt[i++])
		ctx->tr[i].ops->poll_done(ctx, ctx->tr[i].priv, pfd + nfd,
					  cnt[i]);
}

/*
 * A yield in the look before sleeping that nobody took (the processor
 * came straight back) cost a system call for nothing: 0.39 us here, half
 * a look, and a message that came meanwhile waited for it. After each
 * such yield the next comes after twice as many looks, up to
 * 2^SPIN_QUICK_YIELDS; one that another thread took (more ranks than
 * processors: the peer we wait for may be the one) starts over at every
 * look. Per thread: each waiting thread learns its own processor's.
 */
#define SPIN_QUICK_YIELDS	6
/*
 * Taken: the yield was away this long. An untaken one costs 0.39 us here;
 * any switch to another thread and back costs more than this, so a peer
 * on our processor that needed it for a few microseconds (its answer,
 * then its own look) is seen as taking it, and we keep yielding at every
 * look. Misjudged the other way, a yield only counts as taken.
 */
#define SPIN_YIELD_TAKEN_NS	(3 * 1000ULL)

static __thread unsigned int spin_quick_yields;

static void spin_yield(uint64_t t0)
{
	sched_yield();
	if (zcr_now_ns() - t0 >= SPIN_YIELD_TAKEN_NS)
		spin_quick_yields = 0;
	else if (spin_quick_yields < SPIN_QUICK_YIELDS)
		spin_quick_yields++;
}

/*
 * Poll the set without sleeping until something is ready or the clock
 * reaches until (0: not at all); poll's answer (-1 and errno on error),
 * 0 when nothing came.
 * Waking from poll(2) costs the sleeper tens of microseconds on a virtual
 * machine (24 us per message between two network namespaces here, NPtcp
 * against Open MPI's busy TCP BTL), as much as a small message's whole
 * round trip; a look costs a system call. The processor is yielded between
 * looks (spin_yield(): less often while nobody takes it): with more ranks
 * than processors the peer we wait for may need it.
 */
static int spin_poll(struct pollfd *pfd, unsigned int nfd, uint64_t until)
{
	unsigned int looks = 0;
	uint64_t now;
	int ret = 0;

	while (until) {
		ret = poll(pfd, (nfds_t)nfd, 0);
		if (ret || (now = zcr_now_ns()) >= until)
			break;
		if (++looks >= 1u << spin_quick_yields) {
			looks = 0;
			spin_yield(now);
		}
	}
	return ret;
}

/*
 * Do what can be done without waiting; if nothing was and timeout_ms is
 * not 0, poll what every transport waits for (the lock is dropped for poll,
 * and now and then while a transport looks before sleeping) and do it
 * again. poll sleeps ZCR_POLL_SLICE_MS at most at a time, then the set is
 * built again: a connection another thread added is in it by then even if
 * that thread's wake-up was taken by another poller.
 */
int __zcr_progress_locked(struct zcr_ctx *ctx, int timeout_ms)
{
	unsigned int cnt[ZCR_MAX_TRANSPORTS], max, base, nfd;
	uint64_t v, now, next, end = UINT64_MAX, slice, spin;
	int own = thread_wake_fd_if_any();
	bool spun = false;
	int filled;
	struct zcr_pollset *ps;
	struct zcr_list *pos;
	struct pollfd *pfd;
	int i, n, ret;

	n = work_locked(ctx);
	if (n || !timeout_ms)
		return n;
	if (timeout_ms > 0)
		end = zcr_now_ns() + (uint64_t)timeout_ms * 1000000;
again:
	/* The caller's deadline: a transport's look before sleeping ends
	 * there too (poll's timeout below is what remains of it). */
	next = end;
	max = 2;
	nfd = 0;
	for (i = 0; i < ctx->ntr; i++)
		max += ctx->tr[i].ops->poll_max(ctx, ctx->tr[i].priv);
	ps = pollset_get_locked(ctx, max);
	if (!ps)
		return -ENOMEM;
	pfd = ps->fds;
	/*
	 * The context's wake-up eventfd, this thread's own (zcr_wait()),
	 * then each transport's entries.
	 */
	pfd[nfd].fd = ctx->wake_fd;
	pfd[nfd++].events = POLLIN;
	if (own >= 0) {
		pfd[nfd].fd = own;
		pfd[nfd++].events = POLLIN;
	}
	base = nfd;
	ctx->poll_spin_ns = 0;
	/*
	 * Once a transport found work while filling (next 0: the shm
	 * transport's look before sleeping), nobody sleeps: the others are
	 * not asked, nor told poll_done.
	 */
	for (filled = 0; filled < ctx->ntr && next; filled++) {
		i = filled;
		cnt[i] = ctx->tr[i].ops->poll_fill(ctx, ctx->tr[i].priv,
						   pfd + nfd, max - nfd,
						   &next);
		nfd += cnt[i];
	}
	for (pos = ctx->eps.next; ctx->nhandshake && pos != &ctx->eps;
	     pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_HANDSHAKE && ep->hs_deadline < next)
			next = ep->hs_deadline;
	}
	if (!next) {
		ZCR_PROBE(ZCR_PP_PROGRESS);
		/* Work is waiting (a transport saw it while filling): do it. */
		for (i = 0; i < (int)nfd; i++)
			pfd[i].revents = 0;
		ctx->poll_answered = false;
		polled_locked(ctx, pfd + base, cnt, filled);
		pollset_put_locked(ctx, ps);
		return work_locked(ctx);
	}
	/* Wake up for the first deadline, rounded up: not to spin before it. */
	now = zcr_now_ns();
	slice = now + (uint64_t)ZCR_POLL_SLICE_MS * 1000000;
	if (slice < next)
		next = slice;
	else
		slice = 0;	/* another deadline comes first */
	/*
	 * A transport asked for a look before sleeping (ctx.h): once per
	 * call, on the application's thread only, never past the first
	 * deadline. The progress thread sleeps at once.
	 */
	spin = 0;
	if (ctx->poll_spin_ns && !spun && !__zcr_is_progress_thread(ctx)) {
		spin = now + ctx->poll_spin_ns;
		if (spin > next)
			spin = next;
		spun = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	ret = spin_poll(pfd, nfd, spin);
	if (!ret) {
		if (spin)
			now = zcr_now_ns();
		v = next > now ? (next - now + 999999) / 1000000 : 0;
		ret = poll(pfd, (nfds_t)nfd, (int)v);
	}
	if (ret < 0)
		ret = -errno;
	if (ret <= 0)
		for (i = 0; i < (int)nfd; i++)
			pfd[i].revents = 0;
	/*
	 * Read at once: a wake-up left readable would return every poller's
	 * next poll at once. Another sleeper may miss it: what must reach
	 * one thread goes to its own eventfd, and a changed poll set reaches
	 * the others at their next slice.
	 */
	if ((pfd[0].revents & POLLIN) &&
	    read(ctx->wake_fd, &v, sizeof(v)) < 0) {
		/* Another poller took it. */
	}
	if (own >= 0 && (pfd[1].revents & POLLIN) &&
	    read(own, &v, sizeof(v)) < 0) {
		/* Nothing pending after all. */
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->poll_answered = ret >= 0;
	polled_locked(ctx, pfd + base, cnt, filled);
	pollset_put_locked(ctx, ps);
	if (ret < 0 && ret != -EINTR)
		return ret;
	n = work_locked(ctx);
	/* The slice ran out, nothing happened, the caller's time did not. */
	if (!n && !ret && slice)
		goto again;
	return n;
}

int zcr_progress(struct zcr_ctx *ctx, int timeout_ms)
{
	int ret;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = __zcr_progress_locked(ctx, timeout_ms);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}
