// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - kernel-assisted zero-copy receive for message passing.
 *
 * This file holds the misc device, the module parameters and the ioctl
 * dispatcher. Each ioctl command has one small handler: the handshake here,
 * zones in zcrecv_zone.c, the page exchange in zcrecv_remap.c, page
 * versions in zcrecv_pagever.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/kstrtox.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/uaccess.h>

#include "zcrecv_internal.h"

/* ZCRECV_MODULE_VERSION: from the VERSION file, by kmod/Kbuild. */

/*
 * Page limits, checked when set (at load or through sysfs): a value out of
 * range is refused with EINVAL instead of reaching an allocation. The page
 * array of a zone is 8 bytes per page, so the zone cap bounds that array to
 * ZCRECV_ZONE_PAGES_CAP * 8 bytes (32 MiB; zcrecv_internal.h).
 */
#define ZCRECV_PAGES_CAP	BIT(28)	/* 1 TiB: sums cannot overflow */
#define ZCRECV_ZONES_CAP	BIT(20)

struct zcrecv_ulong_param {
	unsigned long *val;
	unsigned long min, max;
};

static int zcrecv_param_set(const char *arg, const struct kernel_param *kp)
{
	const struct zcrecv_ulong_param *p = kp->arg;
	unsigned long v;
	int ret;

	ret = kstrtoul(arg, 0, &v);
	if (ret)
		return ret;
	if (v < p->min || v > p->max)
		return -EINVAL;
	WRITE_ONCE(*p->val, v);
	return 0;
}

static int zcrecv_param_get(char *buf, const struct kernel_param *kp)
{
	const struct zcrecv_ulong_param *p = kp->arg;

	return sysfs_emit(buf, "%lu\n", READ_ONCE(*p->val));
}

static const struct kernel_param_ops zcrecv_param_ops = {
	.set = zcrecv_param_set,
	.get = zcrecv_param_get,
};

unsigned long zcrecv_max_zone_pages = 1UL << 18;	/* 1 GiB of 4 KiB pages */
static struct zcrecv_ulong_param zcrecv_max_zone_pages_p = {
	&zcrecv_max_zone_pages, 1, ZCRECV_ZONE_PAGES_CAP,
};
module_param_cb(max_zone_pages, &zcrecv_param_ops, &zcrecv_max_zone_pages_p,
		0444);
MODULE_PARM_DESC(max_zone_pages,
		 "Largest zone, in pages (default 262144, 1..4194304)");

unsigned long zcrecv_max_process_pages = 1UL << 19;
static struct zcrecv_ulong_param zcrecv_max_process_pages_p = {
	&zcrecv_max_process_pages, 0, ZCRECV_PAGES_CAP,
};
module_param_cb(max_process_pages, &zcrecv_param_ops,
		&zcrecv_max_process_pages_p, 0644);
MODULE_PARM_DESC(max_process_pages,
		 "Most zone pages one process may reserve (default 524288, 0..2^28)");

unsigned long zcrecv_max_global_pages = 1UL << 21;
static struct zcrecv_ulong_param zcrecv_max_global_pages_p = {
	&zcrecv_max_global_pages, 0, ZCRECV_PAGES_CAP,
};
module_param_cb(max_global_pages, &zcrecv_param_ops,
		&zcrecv_max_global_pages_p, 0644);
MODULE_PARM_DESC(max_global_pages,
		 "Most zone pages all processes together may reserve (default 2097152, 0..2^28)");

unsigned long zcrecv_max_process_zones = 1UL << 14;
static struct zcrecv_ulong_param zcrecv_max_process_zones_p = {
	&zcrecv_max_process_zones, 0, ZCRECV_ZONES_CAP,
};
module_param_cb(max_process_zones, &zcrecv_param_ops,
		&zcrecv_max_process_zones_p, 0644);
MODULE_PARM_DESC(max_process_zones,
		 "Most zones one process may have at a time (default 16384, 0..2^20)");

/*
 * The inode every open file maps: one of our own, on a private pseudo
 * filesystem, instead of the device node's. Every open shares its
 * address_space (zones have unique offset windows, see zcrecv_zone.c),
 * and its size says that every offset is inside the file: the fault path
 * maps a huge zone's unit with one PMD only below i_size (finish_fault()
 * falls back to one PTE per fault past it), and a device node's inode has
 * size 0 and belongs to whoever created the node.
 */
#define ZCRECV_FS_MAGIC		0x7a637276	/* "zcrv" */

static struct vfsmount *zcrecv_mnt;
static struct inode *zcrecv_inode;

static int zcrecv_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, ZCRECV_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type zcrecv_fs_type = {
	.name			= "zcrecv",
	.init_fs_context	= zcrecv_fs_init_fs_context,
	.kill_sb		= kill_anon_super,
};

static int zcrecv_inode_init(void)
{
	zcrecv_mnt = kern_mount(&zcrecv_fs_type);
	if (IS_ERR(zcrecv_mnt))
		return PTR_ERR(zcrecv_mnt);
	zcrecv_inode = alloc_anon_inode(zcrecv_mnt->mnt_sb);
	if (IS_ERR(zcrecv_inode)) {
		kern_unmount(zcrecv_mnt);
		return PTR_ERR(zcrecv_inode);
	}
	i_size_write(zcrecv_inode, MAX_LFS_FILESIZE);
	return 0;
}

static void zcrecv_inode_exit(void)
{
	iput(zcrecv_inode);
	kern_unmount(zcrecv_mnt);
}

static int zcrecv_open(struct inode *inode, struct file *file)
{
	int ret;

	file->f_mapping = zcrecv_inode->i_mapping;
	ret = zcrecv_file_init(file);

	if (!ret)
		zcrecv_count(ZCRECV_CNT_OPEN_FILES, 1);
	return ret;
}

static int zcrecv_release(struct inode *inode, struct file *file)
{
	zcrecv_file_release(file->private_data);
	zcrecv_count(ZCRECV_CNT_OPEN_FILES, -1);
	return 0;
}

static bool zcrecv_all_zero(const __u64 *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

static long zcrecv_ioctl_api(void __user *uarg)
{
	struct zcrecv_api api;

	if (copy_from_user(&api, uarg, sizeof(api)))
		return -EFAULT;
	if (api.flags || api.reserved0 ||
	    !zcrecv_all_zero(api.reserved, ARRAY_SIZE(api.reserved)))
		return -EINVAL;
	if (api.abi_version && api.abi_version != ZCRECV_ABI_VERSION)
		return -EOPNOTSUPP;

	api.out_features = ZCRECV_FEATURE_ZONES | ZCRECV_FEATURE_REMAP |
			   ZCRECV_FEATURE_PINCHECK | ZCRECV_FEATURE_HUGE |
			   ZCRECV_FEATURE_PAGEVER;
	api.out_abi_version = ZCRECV_ABI_VERSION;
	api.out_page_size = PAGE_SIZE;
	api.out_max_batch = ZCRECV_MAX_BATCH;
	api.out_max_zone_pages = min(READ_ONCE(zcrecv_max_zone_pages),
				     READ_ONCE(zcrecv_max_process_pages));
	api.out_max_process_pages = READ_ONCE(zcrecv_max_process_pages);
	api.out_huge_unit_size = ZCRECV_HUGE_NR << PAGE_SHIFT;

	if (copy_to_user(uarg, &api, sizeof(api)))
		return -EFAULT;
	return 0;
}

static long zcrecv_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	long ret;

	zcrecv_count(ZCRECV_CNT_IOCTLS, 1);
	switch (cmd) {
	case ZCRECV_IOC_API:
		ret = zcrecv_ioctl_api(uarg);
		break;
	case ZCRECV_IOC_ZONE_CREATE:
		ret = zcrecv_ioctl_zone_create(file->private_data, uarg);
		break;
	case ZCRECV_IOC_REMAP:
		ret = zcrecv_ioctl_remap(file->private_data, uarg);
		break;
	case ZCRECV_IOC_PAGEVER:
		ret = zcrecv_ioctl_pagever(file->private_data, uarg);
		break;
	default:
		ret = -ENOTTY;
		break;
	}

	switch (ret) {
	case 0:
		break;
	case -EINVAL:
		zcrecv_count(ZCRECV_CNT_ERR_INVAL, 1);
		break;
	case -EFAULT:
		zcrecv_count(ZCRECV_CNT_ERR_FAULT, 1);
		break;
	case -ENOTTY:
		zcrecv_count(ZCRECV_CNT_ERR_NOTTY, 1);
		break;
	case -ENOSPC:
		zcrecv_count(ZCRECV_CNT_ERR_NOSPC, 1);
		break;
	case -EPERM:
		zcrecv_count(ZCRECV_CNT_ERR_PERM, 1);
		break;
	default:
		zcrecv_count(ZCRECV_CNT_ERR_OTHER, 1);
		break;
	}
	return ret;
}

static const struct file_operations zcrecv_fops = {
	.owner		= THIS_MODULE,
	.open		= zcrecv_open,
	.release	= zcrecv_release,
	.unlocked_ioctl	= zcrecv_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= zcrecv_mmap,
	/* mmap(NULL) places a zone so that address == offset modulo 2 MiB */
	.get_unmapped_area = thp_get_unmapped_area,
	.llseek		= noop_llseek,
};

static struct miscdevice zcrecv_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= ZCRECV_DEVICE_NAME,
	.fops	= &zcrecv_fops,
	.mode	= 0666,
	.groups	= zcrecv_attr_groups,
};

static int __init zcrecv_init(void)
{
	int ret;

	zcrecv_stats_init();
	ret = zcrecv_inode_init();
	if (ret) {
		pr_err("cannot create the zones' inode: %d\n", ret);
		return ret;
	}
	zcrecv_zones_init();
	ret = misc_register(&zcrecv_miscdev);
	if (ret) {
		zcrecv_zones_exit();
		zcrecv_inode_exit();
		pr_err("cannot register /dev/%s: %d\n", ZCRECV_DEVICE_NAME,
		       ret);
		return ret;
	}
	pr_info("loaded, ABI %d, /dev/%s\n", ZCRECV_ABI_VERSION,
		ZCRECV_DEVICE_NAME);
	return 0;
}

static void __exit zcrecv_exit(void)
{
	misc_deregister(&zcrecv_miscdev);
	zcrecv_zones_exit();
	zcrecv_inode_exit();
	pr_info("unloaded\n");
}

module_init(zcrecv_init);
module_exit(zcrecv_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The zcrecv developers");
MODULE_DESCRIPTION("Zero-copy receive by page-frame exchange for message passing");
MODULE_VERSION(ZCRECV_MODULE_VERSION);
