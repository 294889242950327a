// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_config.c - the table of ZCRECV_* variables (lib/base/config.c).
 * Walks it: every variable refuses each kind of bad value its type can
 * have (not a number, trailing junk, a sign, out of range, an unknown
 * choice or name, too long), with one line on stderr naming the variable,
 * the value and what it accepts, and the call that reads it
 * (zcr_ctx_create(), zcr_ctx_create_job()) fails with -EINVAL; accepts
 * its default and the ends of its range; and a good value reaches the
 * context. Also checks the table itself (defaults in range, names the
 * registries know).
 * Run: build/tests/unit/test_config [name]
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "zt.h"

#define NBAD	8
#define LEN	(PATH_MAX + 8)	/* longer than any variable may be */

/* Bad values of variable id, as its type allows; returns how many. */
static int bad_values(enum zcr_env id, char bad[NBAD][LEN])
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];
	int n = 0;

	switch (v->type) {
	case ZCR_ENV_BOOL:
		snprintf(bad[n++], LEN, "2");
		snprintf(bad[n++], LEN, "yes");
		snprintf(bad[n++], LEN, "1x");
		snprintf(bad[n++], LEN, "-1");
		break;
	case ZCR_ENV_CHOICE:
		snprintf(bad[n++], LEN, "no-such-choice");
		/* case counts */
		snprintf(bad[n++], LEN, "%c%s", v->choices[0][0] - 32,
			 v->choices[0] + 1);
		snprintf(bad[n++], LEN, "%s ", v->choices[0]);
		break;
	case ZCR_ENV_NAME:
		snprintf(bad[n++], LEN, "no-such-name");
		/* and one too long, as a string */
		__attribute__((fallthrough));
	case ZCR_ENV_STRING:
		ZT_ASSERT(v->max + 1 < LEN);
		memset(bad[n], 'x', v->max + 1);
		bad[n++][v->max + 1] = 0;
		break;
	default:
		snprintf(bad[n++], LEN, "abc");
		snprintf(bad[n++], LEN, "%llux", (unsigned long long)v->min);
		snprintf(bad[n++], LEN, "-%llu", (unsigned long long)v->min);
		snprintf(bad[n++], LEN, " %llu", (unsigned long long)v->min);
		snprintf(bad[n++], LEN, "0x10");
		if (v->max < UINT64_MAX)
			snprintf(bad[n++], LEN, "%llu",
				 (unsigned long long)v->max + 1);
		else
			snprintf(bad[n++], LEN, "18446744073709551616");
		if (v->min > 0)
			snprintf(bad[n++], LEN, "%llu",
				 (unsigned long long)v->min - 1);
		break;
	}
	return n;
}

/* Good values of variable id other than unset; returns how many. */
static int good_values(enum zcr_env id, char good[NBAD][LEN],
		       uint64_t want[NBAD])
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];
	int n = 0, i;

	switch (v->type) {
	case ZCR_ENV_BOOL:
		for (i = 0; i < 2; i++) {
			snprintf(good[n], LEN, "%d", i);
			want[n++] = (uint64_t)i;
		}
		break;
	case ZCR_ENV_CHOICE:
		for (i = 0; v->choices[i] && n < NBAD; i++) {
			snprintf(good[n], LEN, "%s", v->choices[i]);
			want[n++] = (uint64_t)i;
		}
		break;
	case ZCR_ENV_NAME:
	case ZCR_ENV_STRING:
		memset(good[n], 'y', v->max);
		good[n][v->max] = 0;
		want[n++] = 0;
		break;
	default:
		snprintf(good[n], LEN, "%llu", (unsigned long long)v->min);
		want[n++] = v->min;
		snprintf(good[n], LEN, "%llu", (unsigned long long)v->max);
		want[n++] = v->max;
		break;
	}
	return n;
}

/* The environment that leaves only var to be blamed. */
static void clean_env(void)
{
	int id;

	for (id = 0; id < ZCR_ENV_COUNT; id++)
		unsetenv(__zcr_env_vars[id].name);
	unsetenv("PMIX_NAMESPACE");
}

/*
 * Run fn with var=val in the environment; what it wrote on stderr goes
 * to err. Returns fn's value.
 */
static int with_env(const char *var, const char *val, int (*fn)(void),
		    char *err, size_t len)
{
	char path[] = "/tmp/zt-config-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t n;

	ZT_ASSERT(fd >= 0 && saved >= 0);
	unlink(path);
	setenv(var, val, 1);
	fflush(stderr);
	dup2(fd, 2);
	ret = fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	unsetenv(var);
	n = pread(fd, err, len - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	return ret;
}

static enum zcr_env current;

static int get_current(void)
{
	struct zcr_env_val v;

	return __zcr_env_get(current, false, &v);
}

static int create_ctx(void)
{
	struct zcr_ctx *ctx = NULL;
	int ret = zcr_ctx_create(NULL, &ctx);

	if (!ret)
		zcr_ctx_destroy(ctx);
	return ret;
}

static int create_job(void)
{
	struct zcr_ctx *ctx = NULL;
	int ret = zcr_ctx_create_job(NULL, 0, NULL, 0, &ctx);

	if (!ret)
		zcr_ctx_destroy(ctx);
	return ret;
}

/* err holds "zcrecv: NAME=VALUE: expected " for variable id. */
static void check_said(enum zcr_env id, const char *val, const char *err,
		       const char *how)
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];
	char want[LEN + 100];

	snprintf(want, sizeof(want), "zcrecv: %s=%s: expected ", v->name,
		 v->secret ? "..." : val);
	ZT_ASSERT_MSG(strstr(err, want), "%s=%.40s%s through %s: no \"%.80s\" "
		      "on stderr, got \"%.200s\"", v->name, val,
		      strlen(val) > 40 ? "..." : "", how, want, err);
	if (v->secret)
		ZT_ASSERT_MSG(!strstr(err, val), "%s: the secret was printed",
			      v->name);
}

ZT_TEST(every_bad_value_is_refused_and_named)
{
	static char bad[NBAD][LEN], err[2 * LEN];
	char why[160];
	struct zcr_env_val val;
	int id, n, i, ret, checked = 0;

	clean_env();
	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];

		n = bad_values(id, bad);
		ZT_ASSERT_MSG(n > 0, "%s: no bad value to try", v->name);
		for (i = 0; i < n; i++) {
			/* A name the registry lacks passes the parse alone. */
			bool reader_only = v->type == ZCR_ENV_NAME && !i;

			why[0] = 0;
			ret = __zcr_env_parse(id, bad[i], &val, why,
					      sizeof(why));
			if (reader_only) {
				ZT_EXPECT_EQ(ret, 0);
			} else {
				ZT_ASSERT_MSG(ret == -EINVAL, "%s=%s parsed",
					      v->name, bad[i]);
				ZT_ASSERT_MSG(!val.set && val.u == v->dflt,
					      "%s=%s: not the default",
					      v->name, bad[i]);
				ZT_ASSERT_MSG(*why, "%s: no why", v->name);
				current = id;
				ZT_EXPECT_EQ(with_env(v->name, bad[i],
						      get_current, err,
						      sizeof(err)), -EINVAL);
				check_said(id, bad[i], err, "the parser");
			}
			/* And the call that reads it fails, naming it. */
			if (v->reader == ZCR_ENV_CTX) {
				ZT_EXPECT_EQ(with_env(v->name, bad[i],
						      create_ctx, err,
						      sizeof(err)), -EINVAL);
				check_said(id, bad[i], err, "zcr_ctx_create");
			} else if (v->reader == ZCR_ENV_JOB) {
				ZT_EXPECT_EQ(with_env(v->name, bad[i],
						      create_job, err,
						      sizeof(err)), -EINVAL);
				check_said(id, bad[i], err,
					   "zcr_ctx_create_job");
			}
			checked++;
		}
	}
	printf("# %d bad values of %d variables refused\n", checked,
	       ZCR_ENV_COUNT);
}

ZT_TEST(good_values_parse)
{
	static char good[NBAD][LEN];
	char why[160];
	uint64_t want[NBAD];
	struct zcr_env_val val;
	int id, n, i;

	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];

		/* Unset and empty are the default. */
		ZT_EXPECT_EQ(__zcr_env_parse(id, NULL, &val, why, sizeof(why)),
			     0);
		ZT_ASSERT(!val.set && val.u == v->dflt && !val.s);
		ZT_EXPECT_EQ(__zcr_env_parse(id, "", &val, why, sizeof(why)),
			     0);
		ZT_ASSERT(!val.set && val.u == v->dflt);
		n = good_values(id, good, want);
		for (i = 0; i < n; i++) {
			ZT_ASSERT_MSG(!__zcr_env_parse(id, good[i], &val, why,
						       sizeof(why)),
				      "%s=%s refused: expected %s", v->name,
				      good[i], why);
			ZT_ASSERT(val.set && !strcmp(val.s, good[i]));
			if (v->type != ZCR_ENV_NAME &&
			    v->type != ZCR_ENV_STRING)
				ZT_EXPECT_EQ(val.u, want[i]);
		}
	}
}

/* Defaults in range, one sentence of help, names the registries know. */
ZT_TEST(the_table_is_sound)
{
	char buf[200], *w, *save;
	int id, i, j;

	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];
		size_t h = v->help ? strlen(v->help) : 0;

		ZT_ASSERT_MSG(v->name && !strncmp(v->name, "ZCRECV_", 7),
			      "entry %d has no ZCRECV_ name", id);
		for (j = 0; j < id; j++)
			ZT_ASSERT_MSG(strcmp(v->name, __zcr_env_vars[j].name),
				      "%s declared twice", v->name);
		ZT_ASSERT_MSG(h > 10 && v->help[h - 1] == '.',
			      "%s: help is not a sentence", v->name);
		ZT_ASSERT(strcmp(__zcr_env_type_name(v->type), "?"));
		ZT_ASSERT(strcmp(__zcr_env_reader_name(v->reader), "?"));
		switch (v->type) {
		case ZCR_ENV_CHOICE:
			ZT_ASSERT(v->choices && v->choices[0] &&
				  v->choices[1]);
			for (i = 0; v->choices[i]; i++)
				;
			ZT_ASSERT_MSG(v->dflt < (uint64_t)i,
				      "%s: default past the choices", v->name);
			break;
		case ZCR_ENV_NAME:
		case ZCR_ENV_STRING:
			ZT_ASSERT_MSG(v->dflt_text, "%s: no default", v->name);
			ZT_ASSERT(v->max > 0 && v->min <= v->max);
			break;
		default:
			ZT_ASSERT_MSG(v->min <= v->max, "%s: empty range",
				      v->name);
			ZT_ASSERT_MSG(v->dflt_text ||
				      (v->min <= v->dflt && v->dflt <= v->max),
				      "%s: default out of range", v->name);
			break;
		}
	}
	/* Every backend the table names is one the engine knows... */
	snprintf(buf, sizeof(buf), "%s",
		 __zcr_env_vars[ZCR_ENV_BACKEND].accepts);
	for (w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
		if (strcmp(w, "or"))
			ZT_ASSERT_MSG(__zcr_remap_lookup(w) >= 0,
				      "ZCRECV_BACKEND: %s is no backend", w);
	/* ...and the predictors are exactly the registry's. */
	snprintf(buf, sizeof(buf), "%s",
		 __zcr_env_vars[ZCR_ENV_PREDICTOR].accepts);
	i = 0;
	w = strtok_r(buf, ":", &save);	/* "a predictor" */
	for (w = strtok_r(NULL, ", ", &save); w;
	     w = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(w, "or"))
			continue;
		ZT_ASSERT_MSG(__zcr_pred_names[i] &&
			      !strcmp(w, __zcr_pred_names[i]),
			      "ZCRECV_PREDICTOR lists %s where the registry "
			      "has %s", w, __zcr_pred_names[i] ?: "none");
		i++;
	}
	ZT_ASSERT_MSG(!__zcr_pred_names[i], "ZCRECV_PREDICTOR does not list "
		      "%s", __zcr_pred_names[i]);
}

/*
 * A good value of each variable a context reads reaches it, and a set
 * variable wins over the attribute.
 */
ZT_TEST(good_values_reach_the_context)
{
	struct zcr_ctx_attr a = { .max_conns = 5, .handshake_timeout_ms = 7 };
	struct zcr_ctx *ctx;
	int id;

	clean_env();
	setenv("ZCRECV_SHM_FRAG_MAX", "1000", 1);
	setenv("ZCRECV_TCP_SPIN_US", "0", 1);
	setenv("ZCRECV_VERBS_LAND", "copy", 1);
	setenv("ZCRECV_HUGE_ZONES", "0", 1);
	setenv("ZCRECV_POLICY", "remap", 1);
	setenv("ZCRECV_HANDSHAKE_TIMEOUT_MS", "250", 1);
	setenv("ZCRECV_PREDICTOR", "lru", 1);
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &ctx), 0);
	ZT_EXPECT_EQ(ctx->env.v[ZCR_ENV_SHM_FRAG_MAX].u, 1000);
	ZT_EXPECT_EQ(ctx->env.v[ZCR_ENV_TCP_SPIN_US].u, 0);
	ZT_EXPECT_EQ(ctx->env.v[ZCR_ENV_VERBS_LAND].u, 1);
	ZT_EXPECT_EQ(ctx->huge_zones, 0);
	ZT_EXPECT_EQ(ctx->policy, ZCRECV_POLICY_REMAP);
	ZT_EXPECT_EQ(ctx->hs_timeout_ns, 250 * 1000000ULL);
	ZT_EXPECT_EQ(ctx->max_conns, 5);	/* the attribute: unset */
	ZT_ASSERT(!strcmp(ctx->pred_name, "lru"));
	/* Unset ones are their defaults. */
	for (id = 0; id < ZCR_ENV_COUNT; id++)
		if (!getenv(__zcr_env_vars[id].name))
			ZT_EXPECT_EQ(ctx->env.v[id].u, __zcr_env_vars[id].dflt);
	zcr_ctx_destroy(ctx);
}

/* ZCRECV_QUIET=1 keeps a bad value quiet; it still fails. */
ZT_TEST(quiet_bad_values_still_fail)
{
	char err[512];

	clean_env();
	setenv("ZCRECV_QUIET", "1", 1);
	ZT_EXPECT_EQ(with_env("ZCRECV_SHM_FRAG_MAX", "abc", create_ctx, err,
			      sizeof(err)), -EINVAL);
	ZT_ASSERT_MSG(!*err, "said: %s", err);
	/* Several bad values: each is said, once. */
	unsetenv("ZCRECV_QUIET");
	setenv("ZCRECV_TCP_SPIN_US", "1000001", 1);
	ZT_EXPECT_EQ(with_env("ZCRECV_SHM_FRAG_MAX", "12k", create_ctx, err,
			      sizeof(err)), -EINVAL);
	printf("# %s", err);
	ZT_ASSERT(strstr(err, "zcrecv: ZCRECV_TCP_SPIN_US=1000001: expected "
			 "a number of microseconds from 0 to 1000000\n"));
	ZT_ASSERT(strstr(err, "zcrecv: ZCRECV_SHM_FRAG_MAX=12k: expected a "
			 "number of bytes, 0 or more\n"));
	ZT_ASSERT(!strstr(strstr(err, "SHM_FRAG_MAX") + 1, "SHM_FRAG_MAX"));
}

/*
 * The nice value of this process's threads other than the caller, the
 * highest; -100 when there is none.
 */
static int others_nice(void)
{
	id_t me = (id_t)syscall(SYS_gettid);
	int best = -100, v;
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");

	ZT_ASSERT(d);
	while ((e = readdir(d))) {
		id_t tid = (id_t)strtoul(e->d_name, NULL, 10);

		if (!tid || tid == me)
			continue;
		errno = 0;
		v = getpriority(PRIO_PROCESS, tid);
		if (!errno && v > best)
			best = v;
	}
	closedir(d);
	return best;
}

/*
 * ZCRECV_PROGRESS_NICE: the progress thread, and only it, runs that much
 * nicer than the process (capped at 19); unset, as nice as the process.
 */
ZT_TEST(progress_nice_makes_only_the_thread_nicer)
{
	struct zcr_ctx_attr a = { .progress_thread = 1 };
	int base0 = getpriority(PRIO_PROCESS, 0), base, want, i, got = -100;
	struct zcr_ctx *ctx;

	/*
	 * Run at nice 19 (make test-unit) nothing is nicer: come down to 10
	 * where allowed (root), so that the thread has room above us; else
	 * the cap is what is checked.
	 */
	if (base0 > 12 && setpriority(PRIO_PROCESS, 0, 10)) {
		/* not allowed: stay */
	}
	base = getpriority(PRIO_PROCESS, 0);
	want = base + 7 > 19 ? 19 : base + 7;
	setenv("ZCRECV_PROGRESS_NICE", "7", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &ctx), 0);
	unsetenv("ZCRECV_PROGRESS_NICE");
	/* The thread sets it when it starts: give it a second. */
	for (i = 0; i < 1000 && got != want; i++) {
		got = others_nice();
		if (got != want)
			usleep(1000);
	}
	ZT_EXPECT_EQ(got, want);
	ZT_EXPECT_EQ(getpriority(PRIO_PROCESS, 0), base);
	zcr_ctx_destroy(ctx);

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &ctx), 0);
	usleep(20000);
	ZT_EXPECT_EQ(others_nice(), base);
	zcr_ctx_destroy(ctx);

	setenv("ZCRECV_PROGRESS_NICE", "20", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &ctx), -EINVAL);
	unsetenv("ZCRECV_PROGRESS_NICE");
	if (base != base0 && setpriority(PRIO_PROCESS, 0, base0)) {
		/* back up to where we were: never refused */
	}
}
