# tests/unit.mk - host unit tests: each tests/unit/test_*.c is one binary,
# linked with the zt framework and the static library.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRCS))
$(foreach t,$(UNIT_SRCS),$(eval $(call zcr_prog,$(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(t)),$(t) tests/unit/zt.c,$(wildcard tests/unit/*.h),-Itests/unit,)))

# The receive-path tests again, with the library built alike, under
# ThreadSanitizer (`make tsan` -> build/tests/tsan/test_*) and under
# AddressSanitizer with UndefinedBehaviorSanitizer, any undefined behaviour
# aborting (`make asan` -> build/tests/asan/test_*); tools/run-tests.sh
# runs both through tests/unit/check-sanitizers.sh, which fails on any
# report.
tsan_TESTS := test_recv test_match test_progress test_shm_tp test_traffic \
	      test_defer test_persist test_prefetch test_prefetch_shm \
	      test_pagever
tsan_FLAGS := -fsanitize=thread -O1 -g
asan_TESTS := test_recv test_match test_match_local test_landing \
	      test_hostile test_shm test_shm_tp test_progress test_traffic \
	      test_defer test_persist test_prefetch test_prefetch_shm \
	      test_pagever
asan_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	      -fno-omit-frame-pointer -O1 -g

# $(1): tsan or asan; the library's objects and the tests, with $(1)_FLAGS
define zcr_sanitized
$(1)_OBJS := $$(patsubst lib/%.c,$$(B)/$(1)/lib/%.o,$$(LIB_SRCS))
$$(B)/$(1)/lib/%.o: lib/%.c $$(LIB_HDRS) | need-cc
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ZCR_CFLAGS) $$($(1)_FLAGS) -c -o $$@ $$<
$$(B)/tests/$(1)/%: tests/unit/%.c tests/unit/zt.c tests/unit/zt.h \
		tests/unit/zcr_pair.h $$($(1)_OBJS) $$(ZCT_A)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ZCR_CFLAGS) $$($(1)_FLAGS) -Itools/lib -Itests/unit -o $$@ \
		$$< tests/unit/zt.c $$($(1)_OBJS) $$(ZCT_A) $$(LDLIBS)
$$(B)/$(1)/lib/core/job.o: ZCR_CFLAGS += $$(if $$(PMIX_INC),-I$$(PMIX_INC))
# Kept: they are intermediate files of the pattern rules above.
.SECONDARY: $$($(1)_OBJS)
.PHONY: $(1)
$(1): $$(patsubst %,$$(B)/tests/$(1)/%,$$($(1)_TESTS))
endef
$(eval $(call zcr_sanitized,tsan))
$(eval $(call zcr_sanitized,asan))

# test_prefetch_shm runs test_prefetch.c's tests over shm.
$(B)/tests/unit/test_prefetch_shm $(B)/tests/tsan/test_prefetch_shm \
$(B)/tests/asan/test_prefetch_shm: tests/unit/test_prefetch.c
# test_prefetch_verbs runs them over verbs (tests/vm-rxe.list).
$(B)/tests/unit/test_prefetch_verbs: tests/unit/test_prefetch.c
