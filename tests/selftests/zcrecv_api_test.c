// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_api_test - kselftests of /dev/zcrecv's handshake and ioctl hygiene:
 * the device opens, ZCRECV_IOC_API answers the right ABI version and page
 * size, unknown commands give ENOTTY, nonzero reserved fields and unknown
 * flags give EINVAL, bad pointers give EFAULT, the uAPI layout is pinned,
 * open/close leaks nothing, and the module unloads and loads again.
 *
 * Run inside a VM with zcrecv.ko loaded (make test does it).
 */
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(dev, device_is_char_misc)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	/* misc devices have major 10 */
	EXPECT_EQ(10, major(st.st_rdev));
}

TEST_F(dev, handshake_reports_abi_and_page_size)
{
	struct zcrecv_api api;

	ASSERT_EQ(0, zcrecv_handshake(self->fd, &api));
	EXPECT_EQ(ZCRECV_ABI_VERSION, api.out_abi_version);
	EXPECT_EQ((unsigned long)sysconf(_SC_PAGESIZE), api.out_page_size);
	EXPECT_LT(0, api.out_max_batch);
	EXPECT_LT(0, api.out_max_zone_pages);
	EXPECT_LE(api.out_max_zone_pages, api.out_max_process_pages);
}

TEST_F(dev, handshake_version_zero_only_asks)
{
	struct zcrecv_api api;

	memset(&api, 0, sizeof(api));
	ASSERT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_API, &api));
	EXPECT_EQ(ZCRECV_ABI_VERSION, api.out_abi_version);
}

TEST_F(dev, handshake_unknown_version_eopnotsupp)
{
	struct zcrecv_api api;

	memset(&api, 0, sizeof(api));
	api.abi_version = ZCRECV_ABI_VERSION + 1;
	EXPECT_EQ(-EOPNOTSUPP, zcrecv_ioctl(self->fd, ZCRECV_IOC_API, &api));
	/* A failed handshake writes nothing back. */
	EXPECT_EQ(0, api.out_abi_version);
}

TEST_F(dev, unknown_command_enotty)
{
	struct zcrecv_api api;

	memset(&api, 0, sizeof(api));
	EXPECT_EQ(-ENOTTY, zcrecv_ioctl(self->fd,
			_IOWR(ZCRECV_IOC_MAGIC, 0x7f, struct zcrecv_api), &api));
	EXPECT_EQ(-ENOTTY, zcrecv_ioctl(self->fd,
			_IOWR('x', 0x00, struct zcrecv_api), &api));
	/* Same number, wrong size: a different command. */
	EXPECT_EQ(-ENOTTY, zcrecv_ioctl(self->fd,
			_IOWR(ZCRECV_IOC_MAGIC, 0x00, __u64), &api));
	EXPECT_EQ(-ENOTTY, zcrecv_ioctl(self->fd, _IO(ZCRECV_IOC_MAGIC, 0), NULL));
}

/* Each reserved word and the flags, one at a time. */
FIXTURE(rsv) {
	int fd;
};

FIXTURE_VARIANT(rsv) {
	const char *what;
	size_t off;
	size_t size;
};

FIXTURE_VARIANT_ADD(rsv, flags) {
	.what = "flags", .off = offsetof(struct zcrecv_api, flags), .size = 4,
};
FIXTURE_VARIANT_ADD(rsv, reserved0) {
	.what = "reserved0", .off = offsetof(struct zcrecv_api, reserved0),
	.size = 4,
};
FIXTURE_VARIANT_ADD(rsv, reserved_first) {
	.what = "reserved[0]", .off = offsetof(struct zcrecv_api, reserved),
	.size = 8,
};
FIXTURE_VARIANT_ADD(rsv, reserved_last) {
	.what = "reserved[2]",
	.off = offsetof(struct zcrecv_api, reserved) + 2 * 8, .size = 8,
};

FIXTURE_SETUP(rsv)
{
	self->fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(rsv)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(rsv, nonzero_gives_einval)
{
	struct zcrecv_api api;
	unsigned char *p = (unsigned char *)&api;

	memset(&api, 0, sizeof(api));
	api.abi_version = ZCRECV_ABI_VERSION;
	/* the highest byte of the field: catches a check of the low half only */
	p[variant->off + variant->size - 1] = 0x80;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_API, &api)) {
		TH_LOG("nonzero %s accepted", variant->what);
	}
}

TEST_F(dev, bad_pointer_efault)
{
	void *ro;

	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_API, NULL));
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_API,
					(void *)(uintptr_t)0xdead000));
	/* Kernel address: access_ok fails. */
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_API,
					(void *)0xffff888000000000ULL));

	/* Readable but not writable: the reply cannot be written back. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_API, ro));
	munmap(ro, 4096);

	/* Straddling the end of a mapping. */
	ro = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_EQ(0, munmap((char *)ro + 4096, 4096));
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_API,
					(char *)ro + 4096 - 16));
	munmap(ro, 4096);
}

/* The ABI layout is frozen: these numbers never change for ABI 1. */
TEST(uapi_layout_pinned)
{
	EXPECT_EQ(80, sizeof(struct zcrecv_api));
	EXPECT_EQ(0, offsetof(struct zcrecv_api, abi_version));
	EXPECT_EQ(4, offsetof(struct zcrecv_api, flags));
	EXPECT_EQ(8, offsetof(struct zcrecv_api, out_features));
	EXPECT_EQ(16, offsetof(struct zcrecv_api, out_abi_version));
	EXPECT_EQ(20, offsetof(struct zcrecv_api, out_page_size));
	EXPECT_EQ(24, offsetof(struct zcrecv_api, out_max_batch));
	EXPECT_EQ(28, offsetof(struct zcrecv_api, reserved0));
	EXPECT_EQ(32, offsetof(struct zcrecv_api, out_max_zone_pages));
	EXPECT_EQ(40, offsetof(struct zcrecv_api, out_max_process_pages));
	EXPECT_EQ(48, offsetof(struct zcrecv_api, out_huge_unit_size));
	EXPECT_EQ(56, offsetof(struct zcrecv_api, reserved));
	EXPECT_EQ(3, sizeof(((struct zcrecv_api *)0)->reserved) / 8);
	EXPECT_EQ(0xB9, ZCRECV_IOC_MAGIC);
	EXPECT_EQ(_IOWR(0xB9, 0x00, struct zcrecv_api), ZCRECV_IOC_API);

	EXPECT_EQ(48, sizeof(struct zcrecv_zone_create));
	EXPECT_EQ(0, offsetof(struct zcrecv_zone_create, pages));
	EXPECT_EQ(8, offsetof(struct zcrecv_zone_create, flags));
	EXPECT_EQ(12, offsetof(struct zcrecv_zone_create, reserved0));
	EXPECT_EQ(16, offsetof(struct zcrecv_zone_create, out_offset));
	EXPECT_EQ(24, offsetof(struct zcrecv_zone_create, out_zone_id));
	EXPECT_EQ(32, offsetof(struct zcrecv_zone_create, reserved));
	EXPECT_EQ(_IOWR(0xB9, 0x01, struct zcrecv_zone_create),
		  ZCRECV_IOC_ZONE_CREATE);

	EXPECT_EQ(32, sizeof(struct zcrecv_remap_entry));
	EXPECT_EQ(0, offsetof(struct zcrecv_remap_entry, src));
	EXPECT_EQ(8, offsetof(struct zcrecv_remap_entry, dst));
	EXPECT_EQ(16, offsetof(struct zcrecv_remap_entry, len));
	EXPECT_EQ(24, offsetof(struct zcrecv_remap_entry, flags));
	EXPECT_EQ(28, offsetof(struct zcrecv_remap_entry, reserved0));

	EXPECT_EQ(48, sizeof(struct zcrecv_remap));
	EXPECT_EQ(0, offsetof(struct zcrecv_remap, entries));
	EXPECT_EQ(8, offsetof(struct zcrecv_remap, count));
	EXPECT_EQ(12, offsetof(struct zcrecv_remap, flags));
	EXPECT_EQ(16, offsetof(struct zcrecv_remap, out_done));
	EXPECT_EQ(20, offsetof(struct zcrecv_remap, out_error));
	EXPECT_EQ(24, offsetof(struct zcrecv_remap, out_pages));
	EXPECT_EQ(32, offsetof(struct zcrecv_remap, reserved));
	EXPECT_EQ(_IOWR(0xB9, 0x02, struct zcrecv_remap), ZCRECV_IOC_REMAP);

	EXPECT_EQ(1, ZCRECV_REMAP_NO_PREFAULT);
	EXPECT_EQ(15, ZCRECV_FEATURE_ZONES | ZCRECV_FEATURE_REMAP |
		     ZCRECV_FEATURE_PINCHECK | ZCRECV_FEATURE_HUGE);
	EXPECT_EQ(1, ZCRECV_ZONE_HUGE);

	EXPECT_EQ(80, sizeof(struct zcrecv_pagever));
	EXPECT_EQ(0, offsetof(struct zcrecv_pagever, addr));
	EXPECT_EQ(8, offsetof(struct zcrecv_pagever, len));
	EXPECT_EQ(16, offsetof(struct zcrecv_pagever, op));
	EXPECT_EQ(20, offsetof(struct zcrecv_pagever, flags));
	EXPECT_EQ(24, offsetof(struct zcrecv_pagever, out_offset));
	EXPECT_EQ(32, offsetof(struct zcrecv_pagever, out_size));
	EXPECT_EQ(40, offsetof(struct zcrecv_pagever, out_first));
	EXPECT_EQ(48, offsetof(struct zcrecv_pagever, out_gen));
	EXPECT_EQ(56, offsetof(struct zcrecv_pagever, out_pages));
	EXPECT_EQ(64, offsetof(struct zcrecv_pagever, reserved));
	EXPECT_EQ(_IOWR(0xB9, 0x03, struct zcrecv_pagever),
		  ZCRECV_IOC_PAGEVER);
	EXPECT_EQ(64, sizeof(struct zcrecv_pagever_head));
	EXPECT_EQ(0, offsetof(struct zcrecv_pagever_head, gen));
	EXPECT_EQ(8, offsetof(struct zcrecv_pagever_head, pages));
	EXPECT_EQ(16, offsetof(struct zcrecv_pagever_head, flags));
	EXPECT_EQ(64, offsetof(struct zcrecv_pagever_head, ver));
	EXPECT_EQ(16, ZCRECV_FEATURE_PAGEVER);
	EXPECT_EQ(2, ZCRECV_ZONE_PAGEVER);
	EXPECT_EQ(1, ZCRECV_PAGEVER_ARM);
	EXPECT_EQ(2, ZCRECV_PAGEVER_BUMP);
	EXPECT_EQ(1, ZCRECV_PAGEVER_DEAD);
}

TEST(open_close_loop_leaks_nothing)
{
	long long before = zcrecv_counter("open_files");
	struct zcrecv_api api;
	int i, fd;

	if (before < 0)
		SKIP(return, "module counters not readable");
	for (i = 0; i < 2000; i++) {
		fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, zcrecv_handshake(fd, &api));
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(before, zcrecv_counter("open_files"));
}

/* Unloading is refused while a file is open, then works, then reloads. */
TEST(rmmod_and_insmod_again)
{
	struct zcrecv_api api;
	int fd;

	if (!zcrecv_ko())
		SKIP(return, "ZCRECV_KO not set: cannot reload the module");
	fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_NE(0, system("rmmod zcrecv 2>/dev/null"));
	close(fd);
	ASSERT_EQ(0, system("rmmod zcrecv"));
	EXPECT_NE(0, access(ZCRECV_DEV, F_OK));
	ASSERT_EQ(0, zcrecv_insmod());
	fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, zcrecv_handshake(fd, &api));
	EXPECT_EQ(0, zcrecv_counter("open_files") - 1);
	close(fd);
}

/*
 * Limits are checked when set: out-of-range values are refused at load and
 * through sysfs, and the largest zone the cap allows is created without a
 * kernel warning (its page array is allocated defensively).
 */
TEST(parameters_checked_when_set)
{
	struct zcrecv_zone_create zc;
	long long old = zcrecv_param("max_process_pages");
	int fd;

	if (!zcrecv_ko())
		SKIP(return, "ZCRECV_KO not set: cannot reload the module");
	ASSERT_LE(0, old);
	EXPECT_EQ(-EINVAL, zcrecv_param_write("max_process_pages", 1LL << 40));
	EXPECT_EQ(-EINVAL, zcrecv_param_write("max_global_pages", 1LL << 29));
	EXPECT_EQ(old, zcrecv_param("max_process_pages"));

	ASSERT_EQ(0, system("rmmod zcrecv"));
	/* 2^28 pages would ask kvmalloc for a 2 GiB page array */
	EXPECT_NE(0, zcrecv_insmod_args("max_zone_pages=268435456"));
	EXPECT_NE(0, zcrecv_insmod_args("max_zone_pages=0"));
	EXPECT_NE(0, zcrecv_insmod_args("max_process_pages=1099511627776"));
	/* the cap itself: a 4 Mi-page zone (32 MiB array), no warning */
	ASSERT_EQ(0, zcrecv_insmod_args("max_zone_pages=4194304 "
					"max_process_pages=4194304 "
					"max_global_pages=4194304"));
	fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd);
	if (fd >= 0) {
		memset(&zc, 0, sizeof(zc));
		zc.pages = 4194304;
		EXPECT_EQ(0, zcrecv_ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc));
		zc.pages = 4194305;
		EXPECT_EQ(-EOVERFLOW,
			  zcrecv_ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc));
		close(fd);
	}
	ASSERT_EQ(0, system("rmmod zcrecv"));
	ASSERT_EQ(0, zcrecv_insmod());
	EXPECT_EQ(1LL << 18, zcrecv_param("max_zone_pages"));
}

TEST_HARNESS_MAIN
