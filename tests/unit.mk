# tests/unit.mk - host unit tests: each tests/unit/test_*.c is one binary,
# linked with the zt framework and the static library.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRCS))
$(foreach t,$(UNIT_SRCS),$(eval $(call zcr_prog,$(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(t)),$(t) tests/unit/zt.c,$(wildcard tests/unit/*.h),-Itests/unit,)))

# The receive-path tests again, with the library, under ThreadSanitizer
# (-fsanitize=thread): `make tsan` builds build/tests/tsan/test_*, and
# tools/run-tests.sh runs them as a host check that fails on any report.
TSAN_TESTS := $(patsubst %,$(B)/tests/tsan/%,test_recv test_match test_progress \
		 test_shm_tp)
TSAN_FLAGS := -fsanitize=thread -O1 -g
TSAN_OBJS  := $(patsubst lib/%.c,$(B)/tsan/lib/%.o,$(LIB_SRCS))
$(B)/tsan/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) $(TSAN_FLAGS) -c -o $@ $<
$(B)/tests/tsan/%: tests/unit/%.c tests/unit/zt.c tests/unit/zt.h \
		tests/unit/zcr_pair.h $(TSAN_OBJS) $(ZCT_A)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) $(TSAN_FLAGS) -Itools/lib -Itests/unit -o $@ $< \
		tests/unit/zt.c $(TSAN_OBJS) $(ZCT_A) $(LDLIBS)

# The receive-path tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (any undefined behaviour aborts): `make asan`
# builds build/tests/asan/test_*; check-sanitizers.sh runs them.
ASAN_TESTS := $(patsubst %,$(B)/tests/asan/%,test_recv test_match \
		 test_match_local test_landing test_hostile test_shm \
		 test_shm_tp test_progress)
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	      -fno-omit-frame-pointer -O1 -g
ASAN_OBJS  := $(patsubst lib/%.c,$(B)/asan/lib/%.o,$(LIB_SRCS))
$(B)/asan/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) $(ASAN_FLAGS) -c -o $@ $<
$(B)/tests/asan/%: tests/unit/%.c tests/unit/zt.c tests/unit/zt.h \
		tests/unit/zcr_pair.h $(ASAN_OBJS) $(ZCT_A)
	@mkdir -p $(dir $@)
	$(CC) $(ZCR_CFLAGS) $(ASAN_FLAGS) -Itools/lib -Itests/unit -o $@ $< \
		tests/unit/zt.c $(ASAN_OBJS) $(ZCT_A) $(LDLIBS)
# Kept: they are intermediate files of the pattern rules above.
.SECONDARY: $(TSAN_OBJS) $(ASAN_OBJS)
.PHONY: tsan asan
tsan: $(TSAN_TESTS)
asan: $(ASAN_TESTS)
