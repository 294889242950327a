// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * app.c - a user program built only from what `make install` put in place,
 * through pkg-config (tests/install/check.sh): it must compile against the
 * installed headers, link the installed shared library and run.
 */
#include <stdio.h>
#include <string.h>
#include <linux/zcrecv.h>
#include <zcrecv.h>

int main(void)
{
	struct zcr_kmod_info info;
	int ret = zcr_kmod_probe(&info);

	printf("libzcrecv %s, ABI %d, module %s\n", zcr_version(),
	       ZCRECV_ABI_VERSION, ret == 0 ? "present" : "absent");
	return strcmp(zcr_version(), "") ? 0 : 1;
}
