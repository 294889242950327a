# tools/uring.mk - libzcrecv's TCP transport batches its receives through
# io_uring when liburing is installed (tools/deps.sh installs it); without
# it the transport uses plain sockets only.
ifneq ($(wildcard /usr/include/liburing.h),)
ZCR_CFLAGS += -DZCR_HAVE_LIBURING
LDLIBS += -luring
endif
