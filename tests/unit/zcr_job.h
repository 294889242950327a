/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcr_job.h - helpers for unit tests that fork the ranks of a job: a clean
 * launcher environment (so that each rank finds only what the test sets),
 * and what carries a connection once its shm negotiation is over.
 */
#ifndef ZCR_JOB_H
#define ZCR_JOB_H

#include <stdio.h>
#include <stdlib.h>

#include "zcrecv.h"

/* Forget every launcher's variables (the test sets its own). */
static inline void job_unset_launcher(void)
{
	static const char *const vars[] = {
		"PMIX_NAMESPACE", "ZCRECV_RANK", "ZCRECV_SIZE", "PMI_RANK",
		"PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
		"SLURM_PROCID", "SLURM_NTASKS", "ZCRECV_JOB_DIR",
		"ZCRECV_WIREUP", "ZCRECV_JOB_SECRET",
	};
	unsigned int i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* In a forked rank: the environment of rank of n through job directory
 * dir (zcr_ctx_create_job(3)'s fallback), nothing else of a launcher. */
static inline void job_rank_env(int rank, int n, const char *dir,
				const char *timeout_ms)
{
	char v[16];

	job_unset_launcher();
	snprintf(v, sizeof(v), "%d", rank);
	setenv("ZCRECV_RANK", v, 1);
	snprintf(v, sizeof(v), "%d", n);
	setenv("ZCRECV_SIZE", v, 1);
	setenv("ZCRECV_JOB_DIR", dir, 1);
	setenv("ZCRECV_JOB_TIMEOUT_MS", timeout_ms, 1);
}

/*
 * What carries ep once the shm negotiation is over ("shm", or "tcp (shm:
 * why)"), driving progress up to 5 s meanwhile; NULL if the endpoint
 * failed or the negotiation did not end.
 */
static inline const char *job_carrier(struct zcr_ctx *ctx, struct zcr_ep *ep)
{
	const char *msg = "";
	int i;

	for (i = 0; i < 500 && !*msg; i++) {
		if (zcr_ep_error(ep, &msg) < 0)
			return NULL;
		if (!*msg)
			zcr_progress(ctx, 10);
	}
	return *msg ? msg : NULL;
}

#endif /* ZCR_JOB_H */
