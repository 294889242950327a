# tools/mpi.mk - the MPI tracer (an LD_PRELOAD library over PMPI) and the
# small MPI applications the bundled traces come from. Built only where the
# MPI compilers exist: `mpicc` (Open MPI on Debian) gives libzctrace.so and
# the apps; `mpicc.mpich` gives libzctrace-mpich.so; mpif90 / mpif90.mpich
# the Fortran ring used to check the Fortran wrappers.
# tools/mpi/make-traces.sh regenerates tests/traces/ with them.
MPI_DIR    := $(B)/tools/mpi
# The tracer and the MPI layer parse their ZCRECV_* variables with the
# library's table (lib/base/config.c, built in: they see no __zcr_* symbol
# of libzcrecv.so).
ZCTRACE_SRCS := tools/mpi/zctrace.c lib/base/config.c
MPI_CFLAGS := -O2 -g -Wall -Wextra -Werror
MPI_APPS   := poisson matmul nbody fft cg
MPICC      := $(shell command -v mpicc 2>/dev/null)
MPICC_MPICH := $(shell command -v mpicc.mpich 2>/dev/null)
MPIF90     := $(shell command -v mpif90 2>/dev/null)
MPIF90_MPICH := $(shell command -v mpif90.mpich 2>/dev/null)
# MPICH's compiler wrapper is installed without its headers by the mpich
# package alone (they come with libmpich-dev).
ifneq ($(MPICC_MPICH),)
ifeq ($(wildcard $(patsubst -I%,%/mpi.h,$(filter -I%,$(shell $(MPICC_MPICH) -show 2>/dev/null)))),)
MPICC_MPICH :=
MPIF90_MPICH :=
endif
endif

ifneq ($(MPICC),)
$(MPI_DIR)/libzctrace.so: $(ZCTRACE_SRCS) lib/base/config.h
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -Ilib -fPIC -shared -o $@ $(ZCTRACE_SRCS) -ldl -lpthread
PROGS += $(MPI_DIR)/libzctrace.so

$(MPI_DIR)/%: tools/mpi/%.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -o $@ $< -lm
PROGS += $(addprefix $(MPI_DIR)/,$(MPI_APPS))
# Nonblocking against persistent round trips (Documentation/mpi.md);
# the late sender (Documentation/prefetch.md).
PROGS += $(MPI_DIR)/pingpong $(MPI_DIR)/latesend
endif

ifneq ($(MPICC_MPICH),)
$(MPI_DIR)/libzctrace-mpich.so: $(ZCTRACE_SRCS) lib/base/config.h
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -Ilib -fPIC -shared -o $@ $(ZCTRACE_SRCS) -ldl -lpthread
PROGS += $(MPI_DIR)/libzctrace-mpich.so

$(MPI_DIR)/cg-mpich: tools/mpi/cg.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -o $@ $< -lm
PROGS += $(MPI_DIR)/cg-mpich
endif

ifneq ($(MPIF90),)
$(MPI_DIR)/ring: tools/mpi/ring.f90
	@mkdir -p $(dir $@)
	$(MPIF90) -O2 -o $@ $<
PROGS += $(MPI_DIR)/ring
endif

ifneq ($(MPIF90_MPICH),)
$(MPI_DIR)/ring-mpich: tools/mpi/ring.f90
	@mkdir -p $(dir $@)
	$(MPIF90_MPICH) -O2 -o $@ $<
PROGS += $(MPI_DIR)/ring-mpich
endif

# libzcrecv-mpi.so: MPI point-to-point over zcrecv (tools/mpi/zcmpi.c; its
# requests and their completion in zcmpi_request.c, Open MPI's Fortran
# bindings in zcmpi_fortran.c; the collectives it leaves to the MPI are
# counted in zcmpi_coll.c; Documentation/mpi.md), one per MPI, linked to
# the libzcrecv.so next to it in build/ (rpath), else the installed one.
ZCMPI_SRCS := tools/mpi/zcmpi.c tools/mpi/zcmpi_request.c \
	tools/mpi/zcmpi_part.c tools/mpi/zcmpi_fortran.c tools/mpi/zcmpi_coll.c \
	lib/base/config.c
ZCMPI_FLAGS = $(MPI_CFLAGS) -std=gnu11 -Iinclude -I$(B)/include -Ilib -fPIC -shared \
	-Wl,-rpath,'$$ORIGIN/../../lib'
ifneq ($(MPICC),)
$(MPI_DIR)/libzcrecv-mpi.so: $(ZCMPI_SRCS) tools/mpi/zcmpi.h lib/base/config.h include/zcrecv.h $(VERSION_H) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(MPICC) $(ZCMPI_FLAGS) -o $@ $(ZCMPI_SRCS) -L$(B)/lib -lzcrecv -ldl -lpthread
PROGS += $(MPI_DIR)/libzcrecv-mpi.so
endif
ifneq ($(MPICC_MPICH),)
$(MPI_DIR)/libzcrecv-mpi-mpich.so: $(ZCMPI_SRCS) tools/mpi/zcmpi.h lib/base/config.h include/zcrecv.h $(VERSION_H) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(ZCMPI_FLAGS) -o $@ $(ZCMPI_SRCS) -L$(B)/lib -lzcrecv -ldl -lpthread
PROGS += $(MPI_DIR)/libzcrecv-mpi-mpich.so
endif

# The MPI tests of libzcrecv-mpi (tests/mpi/check-zcmpi.sh): the semantics
# suite, the collectives' suite, a mixed Fortran/C program, and the sample programs under MPICH.
ZCMPI_TESTS :=
# The collectives called from Fortran (tests/mpi/fcoll.F90), with mpif.h
# and with `use mpi` (-DZC_USE_MPI), against PMPI from C (fcoll_ref.c).
# mpif.h declares no interfaces and a buffer argument of one routine takes
# several types here, which gfortran refuses unless
# -fallow-argument-mismatch, and then warns of at every call: -w (a build
# with -Wall shows no other warning).
FCOLL_SRCS := tests/mpi/fcoll.F90 tests/mpi/fcoll_ref.c
FCOLL_FFLAGS := -O2 -w -fallow-argument-mismatch
# fcoll CC FC OUT [DEFINES]: the program, its C half built beside it.
fcoll_build = $(1) $(MPI_CFLAGS) -c -o $(3)-c.o tests/mpi/fcoll_ref.c && \
	$(2) $(FCOLL_FFLAGS) $(4) -o $(3) tests/mpi/fcoll.F90 $(3)-c.o
ifneq ($(MPICC),)
$(MPI_DIR)/zcmpi_sem: tests/mpi/zcmpi_sem.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -o $@ $<
ZCMPI_TESTS += $(MPI_DIR)/zcmpi_sem
# The carried collectives against the MPI's own (PMPI_*) results.
$(MPI_DIR)/zcmpi_coll: tests/mpi/zcmpi_coll.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -o $@ $<
ZCMPI_TESTS += $(MPI_DIR)/zcmpi_coll
ifneq ($(MPIF90),)
$(MPI_DIR)/mixed: tests/mpi/mixed.f90 tests/mpi/mixed_c.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -c -o $@-c.o tests/mpi/mixed_c.c
	$(MPIF90) -O2 -o $@ tests/mpi/mixed.f90 $@-c.o
ZCMPI_TESTS += $(MPI_DIR)/mixed
# The same C half under the `use mpi` module bindings.
$(MPI_DIR)/usempi: tests/mpi/usempi.f90 tests/mpi/mixed_c.c
	@mkdir -p $(dir $@)
	$(MPICC) $(MPI_CFLAGS) -c -o $@-c.o tests/mpi/mixed_c.c
	$(MPIF90) -O2 -J $(MPI_DIR) -o $@ tests/mpi/usempi.f90 $@-c.o
ZCMPI_TESTS += $(MPI_DIR)/usempi
# Persistent requests from Fortran against MPI's rules.
$(MPI_DIR)/persist: tests/mpi/persist.f90
	@mkdir -p $(dir $@)
	$(MPIF90) -O2 -o $@ $<
ZCMPI_TESTS += $(MPI_DIR)/persist
$(MPI_DIR)/fcoll: $(FCOLL_SRCS)
	@mkdir -p $(dir $@)
	$(call fcoll_build,$(MPICC),$(MPIF90),$@)
$(MPI_DIR)/fcoll-usempi: $(FCOLL_SRCS)
	@mkdir -p $(dir $@)
	$(call fcoll_build,$(MPICC),$(MPIF90),$@,-DZC_USE_MPI)
ZCMPI_TESTS += $(MPI_DIR)/fcoll $(MPI_DIR)/fcoll-usempi
endif
endif
ifneq ($(MPICC_MPICH),)
$(MPI_DIR)/zcmpi_sem-mpich: tests/mpi/zcmpi_sem.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -o $@ $<
$(MPI_DIR)/zcmpi_coll-mpich: tests/mpi/zcmpi_coll.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -o $@ $<
# MPICH's MPI_STATUSES_IGNORE, (MPI_Status *)1, trips gcc's access checks.
$(MPI_DIR)/%-mpich: tools/mpi/%.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -Wno-stringop-overflow -o $@ $< -lm
# MPI-4 partitioned communication: MPICH only (Open MPI 4.1 lacks it).
$(MPI_DIR)/zcmpi_part-mpich: tests/mpi/zcmpi_part.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -Wno-stringop-overflow -o $@ $< -lpthread
ZCMPI_TESTS += $(MPI_DIR)/zcmpi_sem-mpich $(MPI_DIR)/zcmpi_coll-mpich \
	$(MPI_DIR)/zcmpi_part-mpich \
	$(addprefix $(MPI_DIR)/,$(addsuffix -mpich,$(MPI_APPS)))
PROGS += $(MPI_DIR)/pingpong-mpich $(MPI_DIR)/latesend-mpich
ifneq ($(MPIF90_MPICH),)
$(MPI_DIR)/mixed-mpich: tests/mpi/mixed.f90 tests/mpi/mixed_c.c
	@mkdir -p $(dir $@)
	$(MPICC_MPICH) $(MPI_CFLAGS) -c -o $@-c.o tests/mpi/mixed_c.c
	$(MPIF90_MPICH) -O2 -o $@ tests/mpi/mixed.f90 $@-c.o
ZCMPI_TESTS += $(MPI_DIR)/mixed-mpich
$(MPI_DIR)/persist-mpich: tests/mpi/persist.f90
	@mkdir -p $(dir $@)
	$(MPIF90_MPICH) -O2 -o $@ $<
ZCMPI_TESTS += $(MPI_DIR)/persist-mpich
# Partitioned communication from Fortran: MPICH only.
$(MPI_DIR)/fpart-mpich: tests/mpi/fpart.f90
	@mkdir -p $(dir $@)
	$(MPIF90_MPICH) -O2 -o $@ $<
ZCMPI_TESTS += $(MPI_DIR)/fpart-mpich
$(MPI_DIR)/fcoll-mpich: $(FCOLL_SRCS)
	@mkdir -p $(dir $@)
	$(call fcoll_build,$(MPICC_MPICH),$(MPIF90_MPICH),$@,-DZC_MPICH)
$(MPI_DIR)/fcoll-usempi-mpich: $(FCOLL_SRCS)
	@mkdir -p $(dir $@)
	$(call fcoll_build,$(MPICC_MPICH),$(MPIF90_MPICH),$@,-DZC_MPICH -DZC_USE_MPI)
ZCMPI_TESTS += $(MPI_DIR)/fcoll-mpich $(MPI_DIR)/fcoll-usempi-mpich
endif
endif
PROGS += $(ZCMPI_TESTS)
