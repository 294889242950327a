// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * trace.c - streaming reader of receive-call traces (see trace.h).
 *
 * Line: seq op buf size src tag comm [site]. buf, comm and site are hex
 * (0x optional); seq and size decimal (or 0x hex); src and tag signed
 * decimal. site may be missing (0): older tracers did not record it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace.h"

int __zcr_trace_open(struct zcr_trace *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->path = strdup(path);
	if (!t->path)
		return -ENOMEM;
	t->f = fopen(path, "r");
	if (!t->f) {
		int e = errno;

		snprintf(t->err, sizeof(t->err), "%s: %s", path, strerror(e));
		free(t->path);
		t->path = NULL;
		return -e;
	}
	return 0;
}

void __zcr_trace_close(struct zcr_trace *t)
{
	if (t->f)
		fclose(t->f);
	free(t->buf);
	free(t->path);
	memset(t, 0, sizeof(*t));
}

static int parse_u64(const char *s, int base, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!isxdigit((unsigned char)*s))
			return -1;
	}
	errno = 0;
	*v = strtoull(s, &end, base);
	return errno || *end ? -1 : 0;
}

static int parse_i32(const char *s, int32_t *v)
{
	char *end;
	long long x;

	if (!*s)
		return -1;
	errno = 0;
	x = strtoll(s, &end, 0);
	if (errno || *end || x < INT32_MIN || x > INT32_MAX)
		return -1;
	*v = (int32_t)x;
	return 0;
}

#define NFIELDS 8

int __zcr_trace_parse_line(char *line, struct zcr_trace_rec *r,
			   const char **reason)
{
	static const char *const names[NFIELDS] = {
		"seq", "op", "buf", "size", "src", "tag", "comm", "site"
	};
	char *f[NFIELDS + 1], *p = line, *hash = strchr(line, '#');
	int n = 0, i;

	if (hash)
		*hash = '\0';
	while (*p) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (n == NFIELDS) {
			*reason = "too many fields (expected 8)";
			return -EINVAL;
		}
		f[n++] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = '\0';
	}
	if (!n)
		return 0;
	if (n < NFIELDS - 1) {
		*reason = "too few fields (expected seq op buf size src tag comm site)";
		return -EINVAL;
	}
	memset(r, 0, sizeof(*r));
	if (parse_u64(f[0], 10, &r->seq)) {
		*reason = "bad seq (want a non-negative integer)";
		return -EINVAL;
	}
	for (i = 0; f[1][i]; i++) {
		if (i == ZCR_TRACE_OPLEN - 1 ||
		    !(isalnum((unsigned char)f[1][i]) || f[1][i] == '_')) {
			*reason = "bad op (want a name such as recv or irecv)";
			return -EINVAL;
		}
		r->op[i] = (char)tolower((unsigned char)f[1][i]);
	}
	if (parse_u64(f[2], 16, &r->call.buf) ||
	    parse_u64(f[3], 10, &r->call.size) ||
	    parse_i32(f[4], &r->call.src) || parse_i32(f[5], &r->call.tag) ||
	    parse_u64(f[6], 16, &r->call.comm) ||
	    (n == NFIELDS && parse_u64(f[7], 16, &r->call.site))) {
		static char why[64];

		for (i = 2; i < n; i++) {
			uint64_t u;
			int32_t s;
			bool ok = (i == 4 || i == 5) ? !parse_i32(f[i], &s) :
				  !parse_u64(f[i], i == 3 ? 10 : 16, &u);

			if (!ok)
				break;
		}
		snprintf(why, sizeof(why), "bad %s '%.24s'", names[i], f[i]);
		*reason = why;
		return -EINVAL;
	}
	return 1;
}

int __zcr_trace_next(struct zcr_trace *t, struct zcr_trace_rec *r)
{
	const char *reason;
	ssize_t len;
	int ret;

	for (;;) {
		errno = 0;
		len = getline(&t->buf, &t->cap, t->f);
		if (len < 0) {
			if (ferror(t->f)) {
				ret = errno ? -errno : -EIO;
				snprintf(t->err, sizeof(t->err),
					 "%s:%lu: read error: %s", t->path,
					 t->line + 1, strerror(-ret));
				return ret;
			}
			return 0;
		}
		t->line++;
		if (memchr(t->buf, '\0', (size_t)len)) {
			snprintf(t->err, sizeof(t->err),
				 "%s:%lu: NUL byte in line", t->path, t->line);
			return -EINVAL;
		}
		ret = __zcr_trace_parse_line(t->buf, r, &reason);
		if (ret < 0) {
			snprintf(t->err, sizeof(t->err), "%s:%lu: %s",
				 t->path, t->line, reason);
			return ret;
		}
		if (ret)
			return 1;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(char ***list, size_t *n, char *s)
{
	char **l = realloc(*list, (*n + 1) * sizeof(*l));

	if (!l) {
		free(s);
		return -ENOMEM;
	}
	l[(*n)++] = s;
	*list = l;
	return 0;
}

int __zcr_trace_expand(const char *path, char ***list, size_t *n)
{
	struct dirent *de;
	struct stat st;
	size_t first = *n;
	DIR *d;
	int ret = 0;

	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		char *s = strdup(path);

		return s ? push(list, n, s) : -ENOMEM;
	}
	d = opendir(path);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char *s;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&s, "%s/%s", path, de->d_name) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (stat(s, &st) || !S_ISREG(st.st_mode)) {
			free(s);
			continue;
		}
		ret = push(list, n, s);
	}
	closedir(d);
	if (*n > first)
		qsort(*list + first, *n - first, sizeof(**list), cmp_str);
	return ret;
}
