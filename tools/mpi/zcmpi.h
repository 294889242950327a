/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcmpi.h - what the files of libzcrecv-mpi.so share. Nothing here is
 * exported: the library's only interface is the MPI calls it wraps.
 */
#ifndef ZCMPI_H
#define ZCMPI_H

#include <stdbool.h>
#include <stdint.h>

#define ZCMPI_HIDDEN __attribute__((visibility("hidden")))

/* Collectives left to the MPI: calls, and bytes this rank received. */
ZCMPI_HIDDEN void __zcmpi_coll_stats(uint64_t *calls, uint64_t *bytes);

#endif
