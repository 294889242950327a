# tests/selftests.mk - kselftests run in the VM: each tests/selftests/*_test.c
# is one binary, built with the kselftest harness extracted from linux-source.
# The harness's macros declare parameters a test may not use and compare
# signed with unsigned values, and its fork/setjmp use trips -Wclobbered;
# those three warnings are off for these files only.
SELFTEST_CFLAGS := -Itests/selftests -I$(KSFT_DIR) -Wno-unused-parameter -Wno-sign-compare \
	-Wno-clobbered
SELFTEST_SRCS := $(wildcard tests/selftests/*_test.c)
SELFTESTS := $(patsubst tests/selftests/%.c,$(B)/tests/selftests/%,$(SELFTEST_SRCS))
$(foreach t,$(SELFTEST_SRCS),$(eval $(call zcr_prog,$(patsubst tests/selftests/%.c,$(B)/tests/selftests/%,$(t)),$(t),$(KSFT_HDR) $(wildcard tests/selftests/*.h),$$(SELFTEST_CFLAGS),)))
