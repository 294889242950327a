// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shm.c - intra-node transport mechanics: host identity, rings of cells in
 * memfd segments with eventfd doorbells, descriptor hand-over with
 * pidfd_getfd(2), single-copy pulls with process_vm_readv(2).
 *
 * A ring belongs to its consumer: each process creates the ring it reads
 * and the peer attaches it to write. One producer, one consumer; head and
 * tail are free-running 64-bit counters, so the ring is empty when they
 * are equal and full when they differ by ncell. The producer writes a
 * cell, then stores tail with release order; the consumer loads tail with
 * acquire order, reads the cell, then stores head with release order.
 *
 * Doorbell: a consumer about to sleep sets ctl->sleeping, then looks at
 * tail again (both sequentially consistent); a producer stores tail, then
 * looks at ctl->sleeping (also sequentially consistent) and writes the
 * eventfd if it is set. One of the two always sees the other's store, so a
 * cell never sits unnoticed behind a sleeping consumer, and a busy
 * consumer costs the producer no system call.
 *
 * The peer is trusted no further than its shared memory: a counter that
 * claims more than ncell cells is reported, never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/config.h"
#include "transport/shm/shm.h"

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif

static int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int __zcr_shm_hostid(struct zcr_shm_hostid *id)
{
	int ret;

	memset(id, 0, sizeof(*id));
	ret = read_line("/proc/sys/kernel/random/boot_id", id->boot_id,
			sizeof(id->boot_id));
	if (ret)
		return ret;
	if (gethostname(id->host, sizeof(id->host) - 1) < 0)
		return -errno;
	return 0;
}

bool __zcr_shm_same_host(const struct zcr_shm_hostid *a,
			 const struct zcr_shm_hostid *b)
{
	return a->boot_id[0] &&
	       !strncmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) &&
	       !strncmp(a->host, b->host, sizeof(a->host));
}

static int map_ring(struct zcr_shm_ring *r, int fd, size_t len)
{
	/* Populated now: a fault per fresh cell costs more than the copy. */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->ctl = p;
	r->map_len = len;
	r->cells = (char *)p + sizeof(struct zcr_shm_ctl);
	return 0;
}

static size_t ring_bytes(uint32_t ncell, uint64_t cell_size)
{
	return sizeof(struct zcr_shm_ctl) + (size_t)ncell * cell_size;
}

int __zcr_shm_ring_create(struct zcr_shm_ring *r, uint32_t ncell,
			  uint64_t cell_size)
{
	size_t len;
	int ret;

	memset(r, 0, sizeof(*r));
	r->memfd = r->evfd = -1;
	if (!ncell || ncell > 4096 || cell_size < 2 * ZCR_SHM_CELL_HDR ||
	    cell_size > (1U << 20) || cell_size % 64)
		return -EINVAL;
	len = ring_bytes(ncell, cell_size);
	r->memfd = (int)syscall(SYS_memfd_create, "zcrecv-shm",
				MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0)
		return -errno;
	if (ftruncate(r->memfd, (off_t)len) < 0 ||
	    fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
		  F_SEAL_SEAL) < 0) {
		ret = -errno;
		goto err;
	}
	r->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->evfd < 0) {
		ret = -errno;
		goto err;
	}
	ret = map_ring(r, r->memfd, len);
	if (ret)
		goto err;
	r->ctl->ncell = ncell;
	r->ctl->cell_size = cell_size;
	r->ncell = ncell;
	r->cell_size = cell_size;
	atomic_store(&r->ctl->head, 0);
	atomic_store(&r->ctl->tail, 0);
	atomic_store(&r->ctl->sleeping, 0);
	r->ctl->magic = ZCR_SHM_MAGIC;
	return 0;
err:
	__zcr_shm_ring_destroy(r);
	return ret;
}

static int getfd(int pidfd, int fd)
{
	int ret = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);

	return ret < 0 ? -errno : ret;
}

int __zcr_shm_ring_attach(struct zcr_shm_ring *r, int pidfd, int memfd_no,
			  int evfd_no)
{
	struct zcr_shm_ctl ctl;
	struct stat st;
	int mfd, ret;

	memset(r, 0, sizeof(*r));
	r->memfd = r->evfd = -1;
	mfd = getfd(pidfd, memfd_no);
	if (mfd < 0)
		return mfd;
	r->evfd = getfd(pidfd, evfd_no);
	if (r->evfd < 0) {
		ret = r->evfd;
		r->evfd = -1;
		goto out;
	}
	/* What we got must be a sealed memfd holding a ring header. */
	ret = -EBADMSG;
	if (fstat(mfd, &st) < 0 || (size_t)st.st_size < sizeof(ctl) ||
	    fcntl(mfd, F_GET_SEALS) != (F_SEAL_SHRINK | F_SEAL_GROW |
					F_SEAL_SEAL) ||
	    pread(mfd, &ctl, sizeof(ctl), 0) != (ssize_t)sizeof(ctl))
		goto out;
	if (ctl.magic != ZCR_SHM_MAGIC || !ctl.ncell || ctl.ncell > 4096 ||
	    ctl.cell_size < 2 * ZCR_SHM_CELL_HDR ||
	    ctl.cell_size > (1U << 20) || ctl.cell_size % 64 ||
	    ring_bytes(ctl.ncell, ctl.cell_size) != (size_t)st.st_size)
		goto out;
	ret = map_ring(r, mfd, (size_t)st.st_size);
	if (ret)
		goto out;
	r->ncell = ctl.ncell;
	r->cell_size = ctl.cell_size;
	r->tail = atomic_load(&r->ctl->tail);
out:
	/* The mapping keeps the segment; its descriptor is not needed. */
	close(mfd);
	if (ret)
		__zcr_shm_ring_destroy(r);
	return ret;
}

void __zcr_shm_ring_destroy(struct zcr_shm_ring *r)
{
	if (r->ctl)
		munmap(r->ctl, r->map_len);
	if (r->memfd >= 0)
		close(r->memfd);
	if (r->evfd >= 0)
		close(r->evfd);
	memset(r, 0, sizeof(*r));
	r->memfd = r->evfd = -1;
}

static struct zcr_shm_cell *cell_at(struct zcr_shm_ring *r, uint64_t i)
{
	return (struct zcr_shm_cell *)(r->cells +
				       (size_t)(i % r->ncell) * r->cell_size);
}

/*
 * Has the ring room for k cells? The producer reads the consumer's head
 * only when the head it last read leaves too little room: the consumer
 * writes that line at every message, and reading it at every send was a
 * cache miss per small message (6% of a ping-pong rank's samples). An
 * old head only ever understates the room. A head beyond our tail is the
 * consumer's bug: no room.
 */
static bool ring_room(struct zcr_shm_ring *r, uint64_t k)
{
	if (r->tail - r->head <= r->ncell - k)
		return true;
	r->head = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
	return r->tail - r->head <= r->ncell - k;
}

struct zcr_shm_cell *__zcr_shm_ring_reserve(struct zcr_shm_ring *r)
{
	if (!ring_room(r, 1))
		return NULL;
	return cell_at(r, r->tail);
}

struct zcr_shm_cell *__zcr_shm_ring_reserve_n(struct zcr_shm_ring *r,
					      uint64_t k)
{
	if (!k || k > r->ncell || !ring_room(r, k))
		return NULL;
	return cell_at(r, r->tail);
}

/* Copy between buf and the cells from index i on, after i's header. */
static void cells_copy(struct zcr_shm_ring *r, uint64_t i, char *buf,
		       uint64_t len, bool in)
{
	uint64_t off = ZCR_SHM_CELL_HDR, n;
	char *c;

	while (len) {
		c = (char *)cell_at(r, i++) + off;
		n = r->cell_size - off < len ? r->cell_size - off : len;
		if (in)
			memcpy(c, buf, n);
		else
			memcpy(buf, c, n);
		buf += n;
		len -= n;
		off = 0;
	}
}

void __zcr_shm_ring_put(struct zcr_shm_ring *r, const void *src,
			uint64_t len)
{
	/* Most messages fit their first cell: no walk over cells. */
	if (len <= r->cell_size - ZCR_SHM_CELL_HDR)
		memcpy((char *)cell_at(r, r->tail) + ZCR_SHM_CELL_HDR, src,
		       len);
	else
		cells_copy(r, r->tail, (char *)src, len, true);
}

void __zcr_shm_ring_publish(struct zcr_shm_ring *r)
{
	__zcr_shm_ring_publish_n(r, 1);
}

void __zcr_shm_ring_publish_n(struct zcr_shm_ring *r, uint64_t k)
{
	uint64_t one = 1;

	r->tail += k;
	atomic_store(&r->ctl->tail, r->tail);
	if (atomic_load(&r->ctl->sleeping) &&
	    write(r->evfd, &one, sizeof(one)) < 0) {
		/* Saturated counter: a wake-up is pending anyway. */
	}
}

struct zcr_shm_cell *__zcr_shm_ring_peek(struct zcr_shm_ring *r, int *err)
{
	uint64_t tail = atomic_load_explicit(&r->ctl->tail,
					     memory_order_acquire);

	*err = 0;
	if (tail == r->head)
		return NULL;
	if (tail - r->head > r->ncell) {
		*err = -EBADMSG;
		return NULL;
	}
	return cell_at(r, r->head);
}

struct zcr_shm_cell *__zcr_shm_ring_cell(struct zcr_shm_ring *r, uint64_t i)
{
	return cell_at(r, i);
}

void __zcr_shm_ring_consume(struct zcr_shm_ring *r)
{
	__zcr_shm_ring_consume_n(r, 1);
}

uint64_t __zcr_shm_ring_ready(struct zcr_shm_ring *r)
{
	uint64_t n = atomic_load_explicit(&r->ctl->tail,
					  memory_order_acquire) - r->head;

	return n > r->ncell ? 0 : n;
}

void __zcr_shm_ring_get(struct zcr_shm_ring *r, void *dst, uint64_t len)
{
	if (len <= r->cell_size - ZCR_SHM_CELL_HDR)
		memcpy(dst, (char *)cell_at(r, r->head) + ZCR_SHM_CELL_HDR,
		       len);
	else
		cells_copy(r, r->head, dst, len, false);
}

void __zcr_shm_ring_consume_n(struct zcr_shm_ring *r, uint64_t k)
{
	r->head += k;
	atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
}

bool __zcr_shm_ring_sleep_begin(struct zcr_shm_ring *r)
{
	atomic_store(&r->ctl->sleeping, 1);
	if (atomic_load(&r->ctl->tail) != r->head) {
		atomic_store(&r->ctl->sleeping, 0);
		return false;
	}
	return true;
}

void __zcr_shm_ring_sleep_end(struct zcr_shm_ring *r)
{
	atomic_store(&r->ctl->sleeping, 0);
	__zcr_shm_ring_drain(r);
}

void __zcr_shm_ring_drain(struct zcr_shm_ring *r)
{
	uint64_t v;

	if (read(r->evfd, &v, sizeof(v)) < 0) {
		/* Nothing was pending. */
	}
}

enum zcr_shm_ptracer __zcr_shm_ptracer_decide(int scope, bool parent,
					      pid_t named, pid_t pid,
					      enum zcr_shm_ptracer_mode mode)
{
	if (scope != 1 || parent || named == ZCR_SHM_PTRACER_ANY_PID ||
	    named == pid)
		return ZCR_SHM_PTRACER_KEEP;
	if (mode == ZCR_SHM_PTRACER_MODE_ANY)
		return ZCR_SHM_PTRACER_SET_ANY;
	return named ? ZCR_SHM_PTRACER_REFUSE : ZCR_SHM_PTRACER_SET_PID;
}

/*
 * /proc/sys/kernel/yama/ptrace_scope; -1 without Yama (no such file). If
 * the file is there but cannot be read (or /proc is not mounted), assume
 * 1 (*assumed set): setting a reader costs nothing where Yama does not
 * look, and prctl then tells (EINVAL without Yama).
 */
static int yama_scope(bool *assumed)
{
	char b[16];
	int ret = read_line("/proc/sys/kernel/yama/ptrace_scope", b, sizeof(b));

	*assumed = false;
	if (ret == -ENOENT && !access("/proc/self", F_OK))
		return -1;
	*assumed = ret != 0;
	return ret ? 1 : atoi(b);
}

int __zcr_shm_ptracer_mode(enum zcr_shm_ptracer_mode *mode)
{
	struct zcr_env_val v;

	/* zcr_ctx_create() said it if bad; a connection says it again. */
	if (__zcr_env_get(ZCR_ENV_SHM_PTRACER, true, &v))
		return -EINVAL;
	*mode = v.u ? ZCR_SHM_PTRACER_MODE_PEER : ZCR_SHM_PTRACER_MODE_ANY;
	return 0;
}

/*
 * Whom Yama lets read us besides our ancestors: no one (0), one process,
 * or any (ZCR_SHM_PTRACER_ANY_PID), as far as this library set it. One
 * per process, like the setting itself, whatever context asks.
 */
static pthread_mutex_t ptracer_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t ptracer_named;
static pthread_once_t ptracer_once = PTHREAD_ONCE_INIT;

/* A forked child has set nothing (Yama's setting stays with the parent),
 * and may have been forked while another thread held the lock. */
static void ptracer_after_fork(void)
{
	pthread_mutex_init(&ptracer_lock, NULL);
	ptracer_named = 0;
}

static void ptracer_init(void)
{
	pthread_atfork(NULL, NULL, ptracer_after_fork);
}

int __zcr_shm_allow_peer(pid_t pid, char *why, size_t len)
{
	enum zcr_shm_ptracer_mode mode;
	enum zcr_shm_ptracer act;
	unsigned long arg;
	bool assumed;
	int scope = yama_scope(&assumed), ret = 0;

	if (__zcr_shm_ptracer_mode(&mode)) {
		if (why) {
			struct zcr_env_val v;
			char acc[32];

			__zcr_env_get(ZCR_ENV_SHM_PTRACER, true, &v);
			__zcr_env_accepts(ZCR_ENV_SHM_PTRACER, acc,
					  sizeof(acc));
			snprintf(why, len, "ZCRECV_SHM_PTRACER=%s: expected %s",
				 v.s, acc);
		}
		return -EINVAL;
	}
	pthread_once(&ptracer_once, ptracer_init);
	pthread_mutex_lock(&ptracer_lock);
	/* A named reader that exited took Yama's exception with it. */
	if (ptracer_named > 0 && kill(ptracer_named, 0) < 0 && errno == ESRCH)
		ptracer_named = 0;
	/*
	 * Our parent may read us as long as it lives (and the connection
	 * lives no longer); a farther ancestor only while the processes in
	 * between do, so it is named like any peer.
	 */
	act = __zcr_shm_ptracer_decide(scope, pid == getppid(),
				       ptracer_named, pid, mode);
	if (act == ZCR_SHM_PTRACER_REFUSE) {
		if (why)
			snprintf(why, len, "Yama ptrace_scope 1: only pid %d "
				 "may read us (ZCRECV_SHM_PTRACER=peer)",
				 (int)ptracer_named);
		ret = -EBUSY;
	} else if (act != ZCR_SHM_PTRACER_KEEP) {
		arg = act == ZCR_SHM_PTRACER_SET_ANY ?
		      (unsigned long)PR_SET_PTRACER_ANY : (unsigned long)pid;
		if (prctl(PR_SET_PTRACER, arg, 0, 0, 0) < 0) {
			/*
			 * EINVAL: no Yama after all, if we only assumed it;
			 * with Yama, no such process here (it exited, or its
			 * pid is of another pid namespace).
			 */
			ret = errno != EINVAL ? -errno : assumed ? 0 : -ESRCH;
			if (ret && why)
				snprintf(why, len, "prctl(PR_SET_PTRACER, %d) "
					 "refused: %s", (int)pid,
					 strerror(-ret));
		} else {
			ptracer_named = act == ZCR_SHM_PTRACER_SET_ANY ?
					ZCR_SHM_PTRACER_ANY_PID : pid;
		}
	}
	pthread_mutex_unlock(&ptracer_lock);
	return ret;
}

int __zcr_shm_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

/* len bytes between here and remote address far of pid, either way. */
static int move(pid_t pid, void *here, uint64_t far, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		struct iovec l = { (char *)here + done, len - done };
		struct iovec r = { (void *)(uintptr_t)(far + done),
				   len - done };
		ssize_t n = out ? process_vm_writev(pid, &l, 1, &r, 1, 0) :
				  process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EFAULT;
		done += (size_t)n;
	}
	return 0;
}

int __zcr_shm_pull(pid_t pid, void *dst, uint64_t src, size_t len)
{
	return move(pid, dst, src, len, false);
}

int __zcr_shm_push(pid_t pid, uint64_t dst, const void *src, size_t len)
{
	return move(pid, (void *)src, dst, len, true);
}

unsigned int __zcr_shm_share_next(unsigned int share, uint64_t own_bytes,
				  uint64_t own_ns, uint64_t its_bytes,
				  uint64_t its_ns)
{
	double next = (double)share + ZCR_SHM_SHARE_STEP;

	if (its_ns && own_bytes && its_bytes) {
		/* Bytes per ns of each; the share that ends both at once. */
		double own = (double)own_bytes / (double)(own_ns ? own_ns : 1);
		double its = (double)its_bytes / (double)its_ns;

		next = ((double)share +
			ZCR_SHM_SHARE_ONE * its / (its + own)) / 2;
	}
	if (next < ZCR_SHM_SHARE_MIN)
		return ZCR_SHM_SHARE_MIN;
	if (next > ZCR_SHM_SHARE_MAX)
		return ZCR_SHM_SHARE_MAX;
	return (unsigned int)(next + 0.5);
}
