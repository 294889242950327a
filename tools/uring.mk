# tools/uring.mk - libzcrecv's TCP transport batches its receives through
# io_uring when liburing is installed (tools/deps.sh installs it); without
# it the transport uses plain sockets only.
ifneq ($(wildcard /usr/include/liburing.h),)
ZCR_CFLAGS += -DZCR_HAVE_LIBURING
LDLIBS += -luring
else
ZCR_NO_URING := liburing-dev missing: libzcrecv is built without io_uring \
	(apt-get install liburing-dev, or run tools/deps.sh)
endif
