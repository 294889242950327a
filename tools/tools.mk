# tools/tools.mk - host tools: each single-file tools/*.c is one program.
TOOL_SRCS := $(wildcard tools/*.c)
TOOLS := $(patsubst tools/%.c,$(B)/tools/%,$(TOOL_SRCS))
$(foreach t,$(TOOL_SRCS),$(eval $(call zcr_prog,$(patsubst tools/%.c,$(B)/tools/%,$(t)),$(t),,,)))
INSTALL_BINS += $(TOOLS)
