// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * app.c - the smallest complete libzcrecv program, built only from what
 * `make install` put in place, through pkg-config (tests/install/check.sh),
 * and the example README.md points to. Two ranks in one process, each with
 * its own context and progress thread, over loopback: rank 1 sends 1 MiB
 * four times, rank 0 receives each into the same zero-copy-eligible buffer
 * after it has arrived (the early-arrival case zcrecv exists for) and checks
 * every byte. From the second round on the predictor knows the buffer, so
 * with the module loaded the full pages are exchanged, not copied.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zcrecv.h>

#define LEN (1 << 20)
#define TAG 7
#define ROUNDS 4

int main(void)
{
	struct zcr_ctx_attr a0 = { .rank = 0, .progress_thread = 1, .quiet = 1 };
	struct zcr_ctx_attr a1 = { .rank = 1, .progress_thread = 1, .quiet = 1 };
	struct zcr_ctx *c0 = NULL, *c1 = NULL;
	struct zcr_ep *to0 = NULL, *from1 = NULL;
	static unsigned char msg[LEN];
	struct zcr_status st;
	struct zcr_stats s;
	unsigned char *buf = NULL;
	char where[64];
	int port, ret, i, r;

	ret = zcr_ctx_create(&a0, &c0);
	if (!ret)
		ret = zcr_ctx_create(&a1, &c1);
	if (ret)
		goto out;
	port = zcr_ctx_listen(c0, "127.0.0.1:0");
	if (port < 0) {
		ret = port;
		goto out;
	}
	snprintf(where, sizeof(where), "127.0.0.1:%d", port);
	ret = zcr_ep_connect(c1, where, &to0);
	if (!ret)
		ret = zcr_ep_accept(c0, 5000, &from1);
	if (!ret)
		ret = zcr_mem_alloc(c0, LEN, (void **)&buf);
	if (ret)
		goto out;

	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < LEN; i++)
			msg[i] = (unsigned char)(i * 31 + r);
		ret = zcr_send(to0, msg, LEN, TAG);
		if (ret)
			goto out;
		usleep(100000);		/* let the message arrive first */
		ret = zcr_recv(c0, buf, LEN, 1, TAG, &st);
		if (ret)
			goto out;
		if (st.len != LEN || st.source != 1 || memcmp(buf, msg, LEN)) {
			fprintf(stderr, "app: wrong data in round %d\n", r);
			ret = -1;
			goto out;
		}
	}
	zcr_ctx_stats(c0, &s);
	printf("libzcrecv %s, backend %s: %d x 1 MiB from rank %d verified; "
	       "early %llu, hits %llu, pages remapped %llu, bytes copied %llu\n",
	       zcr_version(), s.backend_name, ROUNDS, st.source,
	       (unsigned long long)s.early, (unsigned long long)s.hits,
	       (unsigned long long)s.pages_remapped,
	       (unsigned long long)s.bytes_copied);
out:
	if (ret)
		fprintf(stderr, "app: %s\n", strerror(ret < 0 ? -ret : ret));
	if (buf)
		zcr_mem_free(c0, buf);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
	return ret ? 1 : 0;
}
