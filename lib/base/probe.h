/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * probe.h - latency probes on the small-message path, built only with
 * -DZCR_PROBES (Documentation/benchmarks.md, "Where a small message's
 * time goes"; `make B=build/probes CFLAGS="-O2 -g -DZCR_PROBES"`).
 *
 * One chain per message received on the application's thread: from the
 * sender's publishing of its shm cell to this rank's publishing of its
 * next send (a ping-pong's turn). Each point stamps the time stamp
 * counter; a chain whose points came in order (some may be missing) adds
 * each step's cycles to the process's sums, printed at exit in ns. Without
 * ZCR_PROBES every macro is empty: no cost in a normal build.
 */
#ifndef ZCR_BASE_PROBE_H
#define ZCR_BASE_PROBE_H

#include <stdint.h>

enum zcr_probe_point {
	ZCR_PP_DETECT,		/* the shm look saw a cell (starts a chain) */
	ZCR_PP_PROGRESS,	/* back in the progress pass to do the work */
	ZCR_PP_RX,		/* the shm transport reads the ring */
	ZCR_PP_OPEN,		/* the cell's header taken and checked */
	ZCR_PP_MATCH,		/* match decided where it lands */
	ZCR_PP_LANDED,		/* payload copied, cell given back */
	ZCR_PP_COMPLETE,	/* the receive completed */
	ZCR_PP_WAITED,		/* zcr_wait/zcr_test returns it */
	ZCR_PP_RECV_IN,		/* the next zcr_irecv called */
	ZCR_PP_RECV_OUT,	/* ... and returned */
	ZCR_PP_SEND_IN,		/* the next zcr_isend called */
	ZCR_PP_PUBLISH,		/* its cell published (ends the chain) */
	ZCR_PP_N
};

#ifdef ZCR_PROBES
void __zcr_probe_mark(enum zcr_probe_point p);
/* The time stamp the sender wrote into the cell now opened. */
void __zcr_probe_sent_at(uint64_t stamp);
uint64_t __zcr_probe_stamp(void);
#define ZCR_PROBE(p)		__zcr_probe_mark(p)
#define ZCR_PROBE_SENT_AT(t)	__zcr_probe_sent_at(t)
#define ZCR_PROBE_STAMP()	__zcr_probe_stamp()
#else
#define ZCR_PROBE(p)		do { } while (0)
#define ZCR_PROBE_SENT_AT(t)	do { (void)(t); } while (0)
#define ZCR_PROBE_STAMP()	((uint64_t)0)
#endif

#endif
