# zcrecv - top-level Makefile (GNU make).
#
#   make            build libzcrecv (shared + static), tools, tests and
#                   zcrecv.ko for every installed kernel headers tree
#                   (KDIR=/path/to/build selects one)
#   make test       install missing packages (tools/deps.sh), host checks
#                   and unit tests, then the kselftests in VMs on Debian
#                   6.1 and 6.12 (KERNELS="6.12" to choose), then one line
#                   "N passed, N failed[, N skipped]"
#   make run        install missing packages, then the demo in a VM
#   make apps       install missing packages, then the application bench:
#                   MPI programs under stock Open MPI, MPICH and zcrecv, on
#                   one node and two emulated nodes (build/apps/: table,
#                   CSV, PNG; APPS_ARGS="--trials 5 ..." passes options),
#                   then the collectives alone (tools/zccoll.sh,
#                   build/coll/; COLL_ARGS passes options)
#   make bench-verbs  the verbs transport on soft-RoCE in a VM beside perftest
#                   (build/bench-verbs/: table, CSV, PNG; EMULATED timings)
#   make install    PREFIX=/usr/local DESTDIR= : library, headers, pkg-config,
#                   tools, manual pages (MANDIR=PREFIX/share/man), udev rule
#   make modules_install  zcrecv.ko into /lib/modules/KVER/updates
#   make dkms_install     register the module with DKMS (builds it for the
#                   running kernel and every future one)
#   make checkpatch run checkpatch.pl (from linux-source) on kmod/
#   make soak N=20  the VM suite N times in a row per kernel (KERNELS),
#                   stopping at the first failure with its log
#   make clean
#
# Sub-makefiles tools/*.mk and tests/*.mk are included: each part of the
# tree adds its own programs there.

# The one place the version is written: VERSION. The header's macros
# (build/include/zcrecv_version.h), zcr_version(), zcrecv.pc, the module's
# MODULE_VERSION (kmod/Kbuild reads the file) and dkms.conf come from it;
# tests/abi/check-version.sh checks every one, and the manual pages' .TH.
VERSION    := $(shell cat VERSION)
ifeq ($(shell echo '$(VERSION)' | grep -xE '[0-9]+\.[0-9]+\.[0-9]+'),)
$(error VERSION must hold MAJOR.MINOR.PATCH, not '$(VERSION)')
endif
VERSION_PARTS := $(subst ., ,$(VERSION))
SOVERSION  := 0
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DESTDIR    ?=
KERNELS    ?= 6.1 6.12

B := build
.DEFAULT_GOAL := all
CC ?= cc
CFLAGS ?= -O2 -g
ZCR_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
	-Iinclude -I$(B)/include -Iinclude/uapi -Ilib $(CFLAGS)
# System libraries of the library itself; a plug-in folder adds its own in
# its .mk (lib/transport/verbs/verbs.mk: -libverbs).
LDLIBS := -lpthread -lm

# Dependencies. Only the goals that promise a working test or demo on a
# bare Debian machine install what is missing (tools/deps.sh, quiet when
# all is there), and they do it while this Makefile is read, because what
# is installed decides what gets built (kernel trees, liburing, MPI).
# Every other goal, plain `make` and `make install` included, never runs
# apt or sudo: a missing hard dependency stops it with one line naming the
# Debian package (zcr_need below). ZCRECV_NO_DEPS=1 skips the install.
ZCR_DEPS_GOALS := test run test-unit test-vm soak apps
ifneq ($(filter $(ZCR_DEPS_GOALS),$(MAKECMDGOALS)),)
ifneq ($(ZCRECV_NO_DEPS),1)
ZCR_DEPS_RC := $(shell tools/deps.sh >&2; echo $$?)
ifneq ($(ZCR_DEPS_RC),0)
$(error tools/deps.sh failed: cannot install the build dependencies)
endif
endif
endif
# $(call zcr_need,WHAT,PACKAGE): the recipe line that reports one.
zcr_need = { echo "$(1) missing: apt-get install $(2), or run tools/deps.sh" >&2; exit 1; }

# A C compiler and the C library's headers: hard for everything built here.
.PHONY: need-cc
need-cc:
	@command -v $(firstword $(CC)) >/dev/null || $(call zcr_need,$(CC),gcc)
	@echo '#include <stdio.h>' | $(CC) -E -x c - >/dev/null 2>&1 || \
		$(call zcr_need,the C library headers (stdio.h),libc6-dev)

# ---- library ---------------------------------------------------------------
# One source list per layer of lib/ (Documentation/design.md, "Layers"):
# explicit for the fixed layers; the three plug-in layers build every .c of
# their folder and of its subfolders, so a transport, a remap backend or a
# predictor is its folder plus one line in its registry, and no line here
# (Documentation/extending.md). A folder that needs more of the build (a
# system library to link) says so in a NAME.mk of its own, included below.
LIB_BASE      := lib/base/probe.c lib/base/complete.c lib/base/config.c lib/base/mem.c \
		 lib/base/ops.c
LIB_CORE      := lib/core/context.c lib/core/endpoint.c lib/core/job.c \
		 lib/core/kmod_info.c lib/core/mem.c lib/core/persist.c \
		 lib/core/request.c lib/core/version.c
LIB_TRANSPORT := $(sort $(wildcard lib/transport/*.c lib/transport/*/*.c))
LIB_MATCH     := lib/match/match.c
LIB_STAGING   := lib/staging/staging.c
LIB_REMAP     := $(sort $(wildcard lib/remap/*.c lib/remap/*/*.c))
LIB_PREDICT   := $(sort $(wildcard lib/predict/*.c lib/predict/*/*.c))
LIB_PREFETCH  := $(sort $(wildcard lib/prefetch/*.c))
LIB_PAGEVER   := $(sort $(wildcard lib/pagever/*.c))
include $(sort $(wildcard lib/*/*/*.mk))
LIB_SRCS := $(LIB_BASE) $(LIB_CORE) $(LIB_TRANSPORT) $(LIB_MATCH) $(LIB_STAGING) \
	    $(LIB_REMAP) $(LIB_PREDICT) $(LIB_PREFETCH) $(LIB_PAGEVER)
LIB_OBJS := $(patsubst lib/%.c,$(B)/lib/%.o,$(LIB_SRCS))
VERSION_H := $(B)/include/zcrecv_version.h
LIB_HDRS := $(shell find lib -name '*.h') include/zcrecv.h $(VERSION_H) \
	    include/uapi/linux/zcrecv.h
SONAME   := libzcrecv.so.$(SOVERSION)
LIB_SO   := $(B)/lib/libzcrecv.so.$(VERSION)
LIB_A    := $(B)/lib/libzcrecv.a

$(B)/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) -fPIC -c -o $@ $<

$(LIB_OBJS): | need-cc

# The header's version macros, from VERSION (rewritten only when it changes,
# so that nothing rebuilds for nothing).
$(VERSION_H): VERSION
	@mkdir -p $(dir $@)
	@printf '%s\n' '/* Generated from VERSION by the Makefile: do not edit. */' \
		'#ifndef ZCRECV_VERSION_H' '#define ZCRECV_VERSION_H' \
		'#define ZCRECV_VERSION_MAJOR	$(word 1,$(VERSION_PARTS))' \
		'#define ZCRECV_VERSION_MINOR	$(word 2,$(VERSION_PARTS))' \
		'#define ZCRECV_VERSION_PATCH	$(word 3,$(VERSION_PARTS))' \
		'#endif' > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

# PMIx wire-up (lib/core/job.c): Debian's libpmix-dev keeps pmix.h in its
# own tree; libpmix itself is opened at run time.
PMIX_INC := $(patsubst %/pmix.h,%,$(firstword $(wildcard \
	/usr/lib/*/pmix2/include/pmix.h /usr/include/pmix.h)))
$(B)/lib/core/job.o: ZCR_CFLAGS += $(if $(PMIX_INC),-I$(PMIX_INC))

$(LIB_SO): $(LIB_OBJS) lib/libzcrecv.map
	$(if $(ZCR_NO_URING),@echo "$(ZCR_NO_URING)" >&2)
	$(CC) $(ZCR_CFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script,lib/libzcrecv.map -o $@ $(LIB_OBJS) $(LDLIBS)
	ln -sf $(notdir $@) $(B)/lib/$(SONAME)
	ln -sf $(SONAME) $(B)/lib/libzcrecv.so

$(LIB_A): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(B)/lib/zcrecv.pc: lib/zcrecv.pc.in Makefile VERSION
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/dkms.conf: dkms.conf.in VERSION
	@mkdir -p $(dir $@)
	sed -e 's|@VERSION@|$(VERSION)|' $< > $@

LIBS_BUILT := $(LIB_SO) $(LIB_A) $(B)/lib/zcrecv.pc $(B)/dkms.conf

# ---- tools library -------------------------------------------------------------
# Code only the tools and tests use (trace reader, replay and scoring of
# predictors, the benchmarks' helpers): a static library of its own, never
# part of libzcrecv.so.
ZCT_SRCS := tools/lib/trace.c tools/lib/replay.c tools/lib/bench.c
ZCT_OBJS := $(patsubst tools/lib/%.c,$(B)/tools/lib/%.o,$(ZCT_SRCS))
ZCT_A    := $(B)/tools/lib/libzctools.a
ZCT_HDRS := $(wildcard tools/lib/*.h)

$(B)/tools/lib/%.o: tools/lib/%.c $(ZCT_HDRS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) -Itools/lib -c -o $@ $<

$(ZCT_OBJS): | need-cc

$(ZCT_A): $(ZCT_OBJS)
	rm -f $@
	ar rcs $@ $^

# ---- host programs: tools and tests -----------------------------------------
# Programs link the static library so they run from the build tree as is.
PROGS :=
define zcr_prog
$(1): $(2) $$(ZCT_A) $$(LIB_A) $$(LIB_HDRS) $$(ZCT_HDRS) $(3)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ZCR_CFLAGS) -Itools/lib $(4) -o $$@ $(2) $$(ZCT_A) $$(LIB_A) $$(LDLIBS) $(5)
PROGS += $(1)
endef

# Kselftest harness, extracted from Debian's linux-source-6.12 at build time.
KSFT_DIR := $(B)/ksft
KSFT_HDR := $(KSFT_DIR)/kselftest_harness.h
LINUX_SRC_TAR = $(lastword $(sort $(wildcard /usr/src/linux-source-6.12*.tar.xz)))
$(KSFT_HDR):
	@test -n "$(LINUX_SRC_TAR)" || $(call zcr_need,linux-source-6.12,linux-source-6.12)
	@mkdir -p $(KSFT_DIR)/scripts
	tar -xJf $(LINUX_SRC_TAR) -C $(KSFT_DIR) --strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/tools/testing/selftests/kselftest.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	cp $(KSFT_DIR)/tools/testing/selftests/kselftest*.h $(KSFT_DIR)/
	touch $@

include $(sort $(wildcard tools/*.mk tests/*.mk))

# ---- kernel module -----------------------------------------------------------
# One build tree per kernel (build/kmod/KVER) so objects of two kernels never
# mix; the sources are copied there and built with W=1. Any compiler warning
# fails the build.
ifdef KDIR
KBUILD_DIRS := $(KDIR)
else
KBUILD_DIRS := $(sort $(wildcard /lib/modules/*/build))
endif
KMOD_SRCS := Kbuild VERSION $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild \
	include/uapi/linux/zcrecv.h
kver_of = $(shell make -s -C $(1) kernelrelease 2>/dev/null || basename $$(dirname $(1)))
MODULES :=

define zcr_module
$(B)/kmod/$(2)/kmod/zcrecv.ko: $$(KMOD_SRCS)
	@rm -rf $(B)/kmod/$(2) && mkdir -p $(B)/kmod/$(2)/include/uapi/linux
	@cp -r Kbuild VERSION kmod $(B)/kmod/$(2)/ && cp include/uapi/linux/zcrecv.h $(B)/kmod/$(2)/include/uapi/linux/
	@echo "  KMOD    $(2)"
	@$$(MAKE) -s -C $(1) M=$$(abspath $(B)/kmod/$(2)) W=1 modules > $(B)/kmod/$(2).log 2>&1 || \
		{ cat $(B)/kmod/$(2).log; exit 1; }
	@if grep -iE 'warning:|error:' $(B)/kmod/$(2).log; then \
		echo "zcrecv.ko for $(2) built with warnings" >&2; rm -f $$@; exit 1; fi
MODULES += $(B)/kmod/$(2)/kmod/zcrecv.ko
endef
$(foreach d,$(KBUILD_DIRS),$(eval $(call zcr_module,$(d),$(notdir $(patsubst %/,%,$(dir $(d)))))))
# No kernel tree at all: `make` (and `make modules`) says what to install
# instead of silently building no module.
ifeq ($(strip $(KBUILD_DIRS)),)
MODULES := need-kheaders
.PHONY: need-kheaders
need-kheaders:
	@$(call zcr_need,kernel headers (no /lib/modules/*/build),linux-headers-$$(uname -r))
endif

# ---- top-level targets -------------------------------------------------------
.PHONY: all lib progs modules test test-unit test-vm soak run apps bench-verbs install \
	modules_install dkms_install checkpatch clean help
all: lib progs modules
lib: $(LIBS_BUILT)
progs: $(PROGS)
modules: $(MODULES)

test: all tsan asan
	tools/run-tests.sh $(KERNELS)

test-unit: lib progs tsan asan
	tools/run-tests.sh --unit-only

test-vm: all
	tools/run-tests.sh --vm-only $(KERNELS)

N ?= 20
soak: all
	tools/vm/soak.sh -n $(N) $(KERNELS)

run: all
	tools/run-demo.sh

# Applications side by side with the MPIs they run on (Documentation/apps.md).
apps: all
	tools/zcapps.sh $(APPS_ARGS)
	tools/zccoll.sh $(COLL_ARGS)

# The verbs transport on soft-RoCE in a VM, beside perftest (EMULATED).
bench-verbs: all
	tools/bench-verbs.sh

checkpatch: $(KSFT_HDR)
	perl $(KSFT_DIR)/scripts/checkpatch.pl --no-tree --strict --quiet \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f kmod/*.c kmod/*.h

MAN_PAGES := $(wildcard man/man[1-8]/*.[1-8])
install: lib $(INSTALL_BINS)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libzcrecv.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libzcrecv.so
	install -m 644 include/zcrecv.h $(VERSION_H) $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/uapi/linux/zcrecv.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 644 $(B)/lib/zcrecv.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -D -m 644 packaging/60-zcrecv.rules $(DESTDIR)/lib/udev/rules.d/60-zcrecv.rules
	for p in $(INSTALL_BINS); do install -D -m 755 $$p $(DESTDIR)$(BINDIR)/$$(basename $$p); done
	for m in $(MAN_PAGES); do install -D -m 644 $$m $(DESTDIR)$(MANDIR)/$${m#man/}; done

modules_install: modules
	@for ko in $(MODULES); do \
		kv=$$(basename $$(dirname $$(dirname $$ko))); \
		install -D -m 644 $$ko $(DESTDIR)/lib/modules/$$kv/updates/zcrecv.ko; \
		echo "installed $$ko for $$kv"; \
	done
	@test -n "$(DESTDIR)" || for ko in $(MODULES); do \
		depmod -a $$(basename $$(dirname $$(dirname $$ko))); done

DKMS_SRC := $(DESTDIR)/usr/src/zcrecv-$(VERSION)
dkms_install: $(B)/dkms.conf
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)/include/uapi/linux
	cp -r Kbuild VERSION $(B)/dkms.conf kmod $(DKMS_SRC)/
	cp include/uapi/linux/zcrecv.h $(DKMS_SRC)/include/uapi/linux/
	dkms add -m zcrecv -v $(VERSION) 2>/dev/null || true
	dkms build -m zcrecv -v $(VERSION) $(if $(KVER),-k $(KVER))
	dkms install -m zcrecv -v $(VERSION) $(if $(KVER),-k $(KVER))

clean:
	rm -rf $(B)

help:
	@sed -n '3,25s/^# \{0,1\}//p' Makefile
