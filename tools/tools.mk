# tools/tools.mk - host tools: each tools/*.c is one program; a bigger one,
# tools/NAME.c, keeps the rest of its files in tools/NAME/ (zcbench: its
# reference runners and its plot).
TOOL_SRCS := $(wildcard tools/*.c)
TOOLS := $(patsubst tools/%.c,$(B)/tools/%,$(TOOL_SRCS))
tool_parts = $(sort $(wildcard $(patsubst %.c,%/*.c,$(1))))
$(foreach t,$(TOOL_SRCS),$(eval $(call zcr_prog,$(patsubst tools/%.c,$(B)/tools/%,$(t)),$(t) $(call tool_parts,$(t)),$(wildcard $(patsubst %.c,%/*.h,$(t))),,)))
INSTALL_BINS += $(TOOLS)
