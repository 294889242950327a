/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace.h - reader of receive-call traces (format: Documentation/design.md,
 * "Trace format"); tools/zcpredict and the tests use it.
 *
 * A trace is streamed line by line, so files of any size are read in
 * constant memory. Comments (# to the end of a line), blank lines, CRLF
 * endings and extra whitespace are accepted; a malformed line is reported
 * as "file:line: reason" in zcr_trace.err.
 */
#ifndef ZCR_TRACE_H
#define ZCR_TRACE_H

#include <stdio.h>

#include "predict/predict.h"

#define ZCR_TRACE_OPLEN	32

struct zcr_trace_rec {
	uint64_t seq;
	char op[ZCR_TRACE_OPLEN];
	struct zcr_call call;
};

struct zcr_trace {
	FILE *f;
	char *path;
	unsigned long line;
	char *buf;
	size_t cap;
	char err[512];
};

/* Open @path for reading; 0 or -errno (err says why). */
int __zcr_trace_open(struct zcr_trace *t, const char *path);

/*
 * Read the next record: 1 with *r filled, 0 at end of file, -EINVAL on a
 * malformed line or -errno on a read error (t->err: "file:line: reason").
 */
int __zcr_trace_next(struct zcr_trace *t, struct zcr_trace_rec *r);

/* Parse one line (no newline needed): 1 record, 0 nothing, -EINVAL. */
int __zcr_trace_parse_line(char *line, struct zcr_trace_rec *r,
			   const char **reason);

void __zcr_trace_close(struct zcr_trace *t);

/*
 * Expand a trace argument: a regular file is itself, a directory is every
 * regular file in it sorted by name (hidden files skipped). Appends
 * malloc'ed paths to *list (*n entries); 0 or -errno.
 */
int __zcr_trace_expand(const char *path, char ***list, size_t *n);

#endif /* ZCR_TRACE_H */
