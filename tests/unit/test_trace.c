// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_trace.c - the trace reader (tools/lib/trace.c): accepts comments, blank
 * lines, CRLF, extra whitespace, 0x hex, src -1/-2, tag -1 and any op name;
 * rejects malformed lines with "file:line: reason"; expands a directory to
 * its regular files sorted by name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"
#include "zt.h"

static char dir[64];

static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/zt-trace-XXXXXX");
		ZT_ASSERT(mkdtemp(dir));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ZT_ASSERT(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Each test runs in its own process and leaves no files behind. */
static void cleanup(void)
{
	char cmd[96];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
}

ZT_TEST(parse_tolerant)
{
	const char *p = write_file("ok.trace",
		"# zcrecv-trace v1\r\n"
		"\r\n"
		"   # indented comment\n"
		"0 irecv 0x5555555d46c8 5600 1 1 0x44000000 0x5555555557eb\r\n"
		"1\tAllReduce  7f00 8 -2 -1 44000000 0   # trailing comment\n"
		"2 recv 0x10 0x2000 -1 -1 0x1 0x2\n"
		"3 sendrecv_replace 0x10 16 3 7 0x1\n");
	struct zcr_trace_rec r;
	struct zcr_trace t;

	ZT_EXPECT_EQ(__zcr_trace_open(&t, p), 0);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 1);
	ZT_ASSERT(!strcmp(r.op, "irecv"));
	ZT_EXPECT_EQ(r.call.buf, 0x5555555d46c8ULL);
	ZT_EXPECT_EQ(r.call.size, 5600);
	ZT_EXPECT_EQ(r.call.site, 0x5555555557ebULL);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 1);
	ZT_ASSERT(!strcmp(r.op, "allreduce"));
	ZT_EXPECT_EQ(r.call.buf, 0x7f00);
	ZT_EXPECT_EQ(r.call.src, -2);
	ZT_EXPECT_EQ(r.call.tag, -1);
	ZT_EXPECT_EQ(r.call.comm, 0x44000000);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 1);
	ZT_EXPECT_EQ(r.call.size, 0x2000);
	ZT_EXPECT_EQ(r.call.src, -1);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 1);	/* site missing: 0 */
	ZT_EXPECT_EQ(r.call.site, 0);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 0);
	__zcr_trace_close(&t);
	cleanup();
}

static void expect_error(const char *line, const char *want)
{
	char text[256], msg[600];
	const char *p;
	struct zcr_trace_rec r;
	struct zcr_trace t;

	snprintf(text, sizeof(text), "# header\n0 recv 0x1 8 0 0 0x1 0x1\n%s\n",
		 line);
	p = write_file("bad.trace", text);
	ZT_EXPECT_EQ(__zcr_trace_open(&t, p), 0);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), 1);
	ZT_EXPECT_EQ(__zcr_trace_next(&t, &r), -EINVAL);
	snprintf(msg, sizeof(msg), "%s:3: %s", p, want);
	ZT_ASSERT_MSG(!strncmp(t.err, msg, strlen(msg)), "got '%s' want '%s'",
		      t.err, msg);
	__zcr_trace_close(&t);
}

ZT_TEST(reject_malformed)
{
	expect_error("1 recv 0x1 8 0", "too few fields");
	expect_error("1 recv 0x1 8 0 0 0x1 0x1 9", "too many fields");
	expect_error("x recv 0x1 8 0 0 0x1 0x1", "bad seq");
	expect_error("1 re-cv 0x1 8 0 0 0x1 0x1", "bad op");
	expect_error("1 recv 0xg1 8 0 0 0x1 0x1", "bad buf");
	expect_error("1 recv 0x1 -8 0 0 0x1 0x1", "bad size");
	expect_error("1 recv 0x1 8 zero 0 0x1 0x1", "bad src");
	expect_error("1 recv 0x1 8 0 99999999999 0x1 0x1", "bad tag");
	expect_error("1 recv 0x1 8 0 0 comm 0x1", "bad comm");
	expect_error("1 recv 0x1 8 0 0 0x1 0x", "bad site");
	cleanup();
}

ZT_TEST(expand_directory_sorted)
{
	char **list = NULL, sub[128];
	size_t n = 0, i;

	write_file("rank-0001.trace", "");
	write_file("rank-0000.trace", "");
	write_file(".hidden", "");
	snprintf(sub, sizeof(sub), "%s/subdir", dir);
	mkdir(sub, 0755);
	ZT_EXPECT_EQ(__zcr_trace_expand(dir, &list, &n), 0);
	ZT_EXPECT_EQ(n, 2);
	ZT_ASSERT(strstr(list[0], "rank-0000.trace"));
	ZT_ASSERT(strstr(list[1], "rank-0001.trace"));
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	ZT_EXPECT_EQ(__zcr_trace_expand("/nonexistent/x", &list, &n),
		     -ENOENT);
	cleanup();
}
