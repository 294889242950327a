// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcinfo - print what /dev/zcrecv answers to the handshake, and the module's
 * counters. Usage: zcinfo [-h|--help]
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <linux/zcrecv.h>

#include "zcrecv.h"

#define COUNTERS "/sys/class/misc/zcrecv/counters"

static void print_counters(void)
{
	struct dirent *de;
	DIR *d = opendir(COUNTERS);

	if (!d)
		return;
	printf("counters (%s):\n", COUNTERS);
	while ((de = readdir(d))) {
		char path[512], val[64] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), COUNTERS "/%s", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(val, sizeof(val), f))
			val[strcspn(val, "\n")] = 0;
		fclose(f);
		printf("  %-24s %s\n", de->d_name, val);
	}
	closedir(d);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zcinfo [-h|--help]\n"
		"Prints the library version, what /dev/zcrecv answers to the\n"
		"handshake and the module's counters. Exit status 1 when the\n"
		"device cannot be used.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct zcr_kmod_info info;
	int ret, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	printf("libzcrecv %s\n", zcr_version());
	ret = zcr_kmod_probe(&info);
	if (ret < 0) {
		printf("/dev/zcrecv: %s%s\n", strerror(-ret),
		       ret == -ENOENT ? " (module not loaded)" : "");
		return 1;
	}
	printf("/dev/zcrecv handshake:\n");
	printf("  abi_version        %u\n", info.abi_version);
	printf("  page_size          %u\n", info.page_size);
	printf("  max_batch          %u\n", info.max_batch);
	printf("  features           0x%llx%s%s%s%s\n",
	       (unsigned long long)info.features,
	       info.features & ZCRECV_FEATURE_ZONES ? " zones" : "",
	       info.features & ZCRECV_FEATURE_REMAP ? " remap" : "",
	       info.features & ZCRECV_FEATURE_PINCHECK ? " pincheck" : "",
	       info.features & ZCRECV_FEATURE_HUGE ? " huge" : "");
	printf("  max_zone_pages     %llu\n",
	       (unsigned long long)info.max_zone_pages);
	printf("  max_process_pages  %llu\n",
	       (unsigned long long)info.max_process_pages);
	print_counters();
	return 0;
}
