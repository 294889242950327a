# tests/unit.mk - host unit tests: each tests/unit/test_*.c is one binary,
# linked with the zt framework and the static library.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRCS))
$(foreach t,$(UNIT_SRCS),$(eval $(call zcr_prog,$(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(t)),$(t) tests/unit/zt.c,tests/unit/zt.h,-Itests/unit,)))
