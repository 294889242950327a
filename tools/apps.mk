# tools/apps.mk - the application programs of Documentation/apps.md (PES,
# M3, N-Body, FT, IS, the overlap probes OVFT and OVSPMV, and OVLOGGP:
# tools/apps/*.c with the shared tools/apps/apps.c and fft.c),
# one build per MPI: build/tools/apps/NAME with Open MPI's `mpicc`,
# build/tools/apps/NAME-mpich with `mpicc.mpich`, each only where that
# compiler (and for MPICH its headers) exists. tools/zcapps.sh runs them;
# tests/apps/check-apps.sh checks them.
APPS_DIR    := $(B)/tools/apps
APPS_NAMES  := pes m3 nbody ft is ovft ovspmv
# Built alike but not an application (zcapps.sh runs APPS_NAMES only):
# ovloggp measures the LogGP parameters tools/zcoverlap.sh models with.
APPS_PROBES := ovloggp
APPS_BUILT  := $(APPS_NAMES) $(APPS_PROBES)
# Those that refuse --comm coll (the overlap probes: when each
# point-to-point send starts is what they measure); zcapps.sh skips it.
APPS_P2P_ONLY := ovft ovspmv
# The code every program links: apps.c (options, accounts, the result
# line) and fft.c (the radix-2 FFT of ft and ovft).
APPS_SHARED := apps fft
APPS_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Werror -Itools/apps
APPS_HDRS   := tools/apps/apps.h tools/apps/fft.h
APPS_MPICC  := $(shell command -v mpicc 2>/dev/null)
APPS_MPICC_MPICH := $(shell command -v mpicc.mpich 2>/dev/null)
# MPICH's compiler wrapper is installed without its headers by the mpich
# package alone (they come with libmpich-dev).
ifneq ($(APPS_MPICC_MPICH),)
ifeq ($(wildcard $(patsubst -I%,%/mpi.h,$(filter -I%,$(shell $(APPS_MPICC_MPICH) -show 2>/dev/null)))),)
APPS_MPICC_MPICH :=
endif
endif

ifneq ($(APPS_MPICC),)
# The shared code, compiled once for this MPI.
APPS_OBJS := $(APPS_SHARED:%=$(APPS_DIR)/%.o)
$(APPS_OBJS): $(APPS_DIR)/%.o: tools/apps/%.c $(APPS_HDRS)
	@mkdir -p $(dir $@)
	$(APPS_MPICC) $(APPS_CFLAGS) -c -o $@ $<

$(addprefix $(APPS_DIR)/,$(APPS_BUILT)): $(APPS_DIR)/%: tools/apps/%.c \
		$(APPS_OBJS) $(APPS_HDRS)
	@mkdir -p $(dir $@)
	$(APPS_MPICC) $(APPS_CFLAGS) -o $@ $< $(APPS_OBJS) -lm
PROGS += $(addprefix $(APPS_DIR)/,$(APPS_BUILT))
endif

ifneq ($(APPS_MPICC_MPICH),)
# MPICH's MPI_STATUSES_IGNORE, (MPI_Status *)1, trips gcc's access checks.
APPS_CFLAGS_MPICH := $(APPS_CFLAGS) -Wno-stringop-overflow
APPS_OBJS_MPICH := $(APPS_SHARED:%=$(APPS_DIR)/%-mpich.o)
$(APPS_OBJS_MPICH): $(APPS_DIR)/%-mpich.o: tools/apps/%.c $(APPS_HDRS)
	@mkdir -p $(dir $@)
	$(APPS_MPICC_MPICH) $(APPS_CFLAGS_MPICH) -c -o $@ $<

$(addprefix $(APPS_DIR)/,$(addsuffix -mpich,$(APPS_BUILT))): \
		$(APPS_DIR)/%-mpich: tools/apps/%.c $(APPS_OBJS_MPICH) \
		$(APPS_HDRS)
	@mkdir -p $(dir $@)
	$(APPS_MPICC_MPICH) $(APPS_CFLAGS_MPICH) -o $@ $< \
		$(APPS_OBJS_MPICH) -lm
PROGS += $(addprefix $(APPS_DIR)/,$(addsuffix -mpich,$(APPS_BUILT)))
endif
