// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_registry.c - the one registry convention of transports, remap
 * backends and predictors (lib/base/ops.h): a table missing a required op
 * is refused with a message naming the plug-in and the op, missing
 * optional ops get the kind's defaults, members past the table's size are
 * absent, and a size larger than the struct is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "zt.h"
#include "core/core.h"
#include "predict/impl.h"

/* Run fn with stderr in a file; returns its result, *msg what it said. */
static int quietly(int (*fn)(void *), void *arg, char *msg, size_t len)
{
	char path[] = "/tmp/zcr-registry-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t n;

	ZT_ASSERT(fd >= 0 && saved >= 0);
	unlink(path);
	fflush(stderr);
	dup2(fd, 2);
	ret = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, msg, len - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	close(fd);
	return ret;
}

static int tp_send(struct zcr_ep *ep, struct zcr_req *r)
{
	(void)ep;
	(void)r;
	return 0;
}

static void tp_close(struct zcr_ep *ep, void *priv)
{
	(void)ep;
	(void)priv;
}

static int tp_adopt(struct zcr_ep *ep, const struct zcr_transport_ops *prev,
		    void *prev_priv, void *arg)
{
	(void)ep;
	(void)prev;
	(void)prev_priv;
	(void)arg;
	return 0;
}

static const struct zcr_transport_ops full_tp = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "whole",
	.send = tp_send,
	.ep_close = tp_close,
	.ep_free = tp_close,
};

static struct zcr_transport_ops out_tp;

static int set_tp(void *in)
{
	return __zcr_transport_ops_set(&out_tp, in, "dummy");
}

ZT_TEST(transport_without_send_is_refused_naming_it)
{
	struct zcr_transport_ops t = full_tp;
	char msg[256];

	t.send = NULL;
	ZT_EXPECT_EQ(quietly(set_tp, &t, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "transport dummy") &&
		      strstr(msg, "required op send is missing"),
		      "said: %s", msg);
}

ZT_TEST(transport_optional_ops_get_defaults)
{
	struct zcr_transport_ops t = full_tp;
	void *priv = &t;
	char msg[256];

	ZT_EXPECT_EQ(quietly(set_tp, &t, msg, sizeof(msg)), 0);
	ZT_EXPECT_EQ(msg[0], '\0');
	ZT_ASSERT(out_tp.init && out_tp.fini && out_tp.start &&
		  out_tp.poll_done && out_tp.listen && out_tp.connect &&
		  out_tp.adopt);
	ZT_ASSERT(out_tp.send == tp_send);
	/* Nothing to poll, no progress of its own: what a transport without
	 * poll_max crashed the progress engine with, now 0 entries. */
	ZT_EXPECT_EQ(out_tp.poll_max(NULL, NULL), 0);
	ZT_EXPECT_EQ(out_tp.poll_fill(NULL, NULL, NULL, 0, NULL), 0);
	ZT_EXPECT_EQ(out_tp.progress(NULL, NULL), 0);
	ZT_EXPECT_EQ(out_tp.init(NULL, &priv), 0);
	ZT_ASSERT(priv == NULL);
	ZT_EXPECT_EQ(out_tp.listen(NULL, NULL, "x"), -EOPNOTSUPP);
	ZT_EXPECT_EQ(out_tp.connect(NULL, NULL, "x", &priv), -EOPNOTSUPP);
	ZT_EXPECT_EQ(out_tp.adopt(NULL, NULL, NULL, NULL), -EOPNOTSUPP);
}

ZT_TEST(members_past_the_size_are_absent_and_a_larger_size_refused)
{
	struct zcr_transport_ops t = full_tp;
	char msg[256];

	/* Built before ep_free existed: a required op missing. */
	t.size = offsetof(struct zcr_transport_ops, ep_free);
	ZT_EXPECT_EQ(quietly(set_tp, &t, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "required op ep_free"), "said: %s", msg);
	/* Only adopt past the size: it gets the default. */
	t.size = offsetof(struct zcr_transport_ops, adopt);
	t.adopt = tp_adopt;
	ZT_EXPECT_EQ(quietly(set_tp, &t, msg, sizeof(msg)), 0);
	ZT_ASSERT(out_tp.adopt && out_tp.adopt != tp_adopt);
	t.size = sizeof(t) + 8;
	ZT_EXPECT_EQ(quietly(set_tp, &t, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "size"), "said: %s", msg);
}

static struct zcr_remap_ops out_be;

static int set_be(void *in)
{
	return __zcr_remap_ops_set(&out_be, in, "dummy");
}

ZT_TEST(backend_without_slot_alloc_is_refused_naming_it)
{
	struct zcr_remap_ops b = { .size = sizeof(b), .name = "dummy" };
	char msg[256];

	ZT_EXPECT_EQ(quietly(set_be, &b, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "remap backend dummy") &&
		      strstr(msg, "required op slot_alloc is missing"),
		      "said: %s", msg);
}

static struct zcr_pred_ops out_pr;

static int set_pr(void *in)
{
	return __zcr_pred_ops_set(&out_pr, in, "dummy");
}

static void pr_observe(struct zcr_predictor *p, uint32_t id,
		       const struct zcr_call *c)
{
	(void)p;
	(void)id;
	(void)c;
}

static bool pr_predict(struct zcr_predictor *p, unsigned int k, uint32_t *id)
{
	(void)p;
	*id = k;
	return true;
}

static size_t pr_memory(const struct zcr_predictor *p)
{
	(void)p;
	return 0;
}

ZT_TEST(predictor_without_memory_is_refused_and_defaults_fill_the_rest)
{
	struct zcr_pred_ops o = { .size = sizeof(o), .name = "dummy",
				  .observe = pr_observe,
				  .predict = pr_predict };
	struct zcr_predictor p = { .ops = &out_pr };
	uint32_t ids[4];
	char msg[256];

	ZT_EXPECT_EQ(quietly(set_pr, &o, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "predictor dummy") &&
		      strstr(msg, "required op memory is missing"),
		      "said: %s", msg);
	o.memory = pr_memory;
	ZT_EXPECT_EQ(quietly(set_pr, &o, msg, sizeof(msg)), 0);
	ZT_EXPECT_EQ(out_pr.period(&p), 0);
	ZT_EXPECT_EQ(out_pr.candidates(&p, 3, ids, 4), 1);
	ZT_EXPECT_EQ(ids[0], 3);
	/* The name must be its registry line's. */
	o.name = "other";
	ZT_EXPECT_EQ(quietly(set_pr, &o, msg, sizeof(msg)), -EINVAL);
	ZT_ASSERT_MSG(strstr(msg, "registry line"), "said: %s", msg);
}
