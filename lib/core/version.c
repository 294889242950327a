// SPDX-License-Identifier: LGPL-2.1-or-later
/* version.c - the library's version. */
#include "zcrecv.h"

#define ZCR_STR2(x) #x
#define ZCR_STR(x) ZCR_STR2(x)

const char *zcr_version(void)
{
	return ZCR_STR(ZCRECV_VERSION_MAJOR) "." ZCR_STR(ZCRECV_VERSION_MINOR)
		"." ZCR_STR(ZCRECV_VERSION_PATCH);
}
