# verbs.mk - what the verbs transport adds to the build: libibverbs (the
# Makefile includes every lib/*/*/*.mk; this folder's sources are picked up
# by its wildcard).
LDLIBS += -libverbs
