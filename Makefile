# xdp-vi: user-level networking over XDP and AF_XDP.
#
#   make            build everything into build/
#   make test       install what is missing, build, run every suite
#   make demo       install what is missing, build, run the two-node demo
#   make bench      performance runs (never part of the tests)
#   make install PREFIX=/usr/local   (also LIBDIR, BINDIR, ..., DESTDIR)
#   make uninstall PREFIX=/usr/local (the same variables as install)
#   make deps       only install the Debian packages the project needs

PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
B       := build

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool

# The one place the version is written: include/xvi.h (XVI_VERSION_*).
xvi_ver = $(shell sed -n 's/^\#define XVI_VERSION_$(1)[[:space:]]*\([0-9]*\).*/\1/p' include/xvi.h)
VERSION := $(call xvi_ver,MAJOR).$(call xvi_ver,MINOR).$(call xvi_ver,PATCH)
SONAME  := libxvi.so.$(firstword $(subst ., ,$(VERSION)))
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS  ?= -O2 -g
CFLAGS  += $(WARN) -std=gnu11 -D_GNU_SOURCE -fPIC -Iinclude -Ilibxvi -I$(B)/include
LIB_CFLAGS := $(CFLAGS) -fvisibility=hidden
LDLIBS  := -lxdp -lbpf -lmnl -lelf -lz -lpthread -lm

BPF_CFLAGS := -O2 -g -target bpf -Wall -Werror -Iinclude -Ibpf -I$(ARCH_INC)

# ---- sources ---------------------------------------------------------------
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(B)/include/%.skel.h,$(BPF_SRCS))
BPF_HDRS  := $(wildcard bpf/*.h) include/xvi_wire.h include/xvi_ext.h
# Sample extension handlers (examples/ext/NAME.bpf.c -> $(B)/ext/NAME.bpf.o).
EXT_SRCS  := $(wildcard examples/ext/*.bpf.c)
EXT_OBJS  := $(patsubst examples/ext/%.bpf.c,$(B)/ext/%.bpf.o,$(EXT_SRCS))
# Handlers the lab suites load (tests/lab/bpf/NAME.bpf.c -> $(B)/tests/NAME.bpf.o).
LAB_EXT_SRCS := $(wildcard tests/lab/bpf/*.bpf.c)
LAB_EXT_OBJS := $(patsubst tests/lab/bpf/%.bpf.c,$(B)/tests/%.bpf.o,$(LAB_EXT_SRCS))

# libxvi, one folder per layer (docs/DESIGN.md, section 7).
LIB_SRCS  := $(wildcard libxvi/*/*.c)
LIB_OBJS  := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
LIB_HDRS  := $(wildcard libxvi/*/*.h include/*.h)

# Each tools/NAME/ directory is one program, except tools/lib/: the code the
# programs share, a static library that is linked into each and installed
# nowhere.
TOOL_DIRS := $(filter-out lib,$(patsubst tools/%/,%,$(sort $(dir $(wildcard tools/*/*.c)))))
TOOLS     := $(addprefix $(B)/bin/,$(TOOL_DIRS))
TOOLS_LIB_SRCS := $(wildcard tools/lib/*.c)
TOOLS_LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(TOOLS_LIB_SRCS))
TOOLS_LIB := $(B)/lib/libxvi-tools.a

PROGS := $(TOOLS)
LIBS  := $(B)/lib/libxvi.a $(B)/lib/libxvi.so

UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BIN  := $(B)/tests/unit-tests
XDP_SRCS  := $(wildcard tests/xdp/*.c)
XDP_BIN   := $(B)/tests/xdp-fixtures
# Drivers the lab suites and the bench run (tests/{lab,bench}/NAME.c ->
# $(B)/tests/NAME).
LAB_SRCS  := $(wildcard tests/lab/*.c)
LAB_BINS  := $(patsubst tests/lab/%.c,$(B)/tests/%,$(LAB_SRCS))
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(B)/tests/%,$(BENCH_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all deps test demo bench install uninstall clean check-tools
all: $(BPF_OBJS) $(BPF_SKELS) $(EXT_OBJS) $(LAB_EXT_OBJS) $(LIBS) $(PROGS) $(UNIT_BIN) $(XDP_BIN) $(LAB_BINS) $(BENCH_BINS) $(FUZZ_BINS)

# ---- BPF datapath ----------------------------------------------------------
$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(B)/bpf
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(B)/include/%.skel.h: $(B)/bpf/%.bpf.o | $(B)/include
	$(BPFTOOL) gen skeleton $< name $(subst .bpf,,$(subst -,_,$*))_bpf > $@.tmp && mv $@.tmp $@

# ---- sample extension handlers (docs/EXTENSIONS.md) -------------------------
# Built as a user would build a handler: against include/xvi_ext.h alone.

$(B)/ext/%.bpf.o: examples/ext/%.bpf.c include/xvi_ext.h include/xvi_wire.h
	@mkdir -p $(@D)
	$(CLANG) -O2 -g -target bpf -Wall -Werror -Iinclude -I$(ARCH_INC) -c $< -o $@

$(B)/tests/%.bpf.o: tests/lab/bpf/%.bpf.c include/xvi_ext.h include/xvi_wire.h
	@mkdir -p $(@D)
	$(CLANG) -O2 -g -target bpf -Wall -Werror -Iinclude -I$(ARCH_INC) -c $< -o $@

# xvi-kvcache carries the cache's programs inside (a skeleton of the
# sample's object), so that an installed copy needs no file beside it.
$(B)/include/kvcache.skel.h: $(B)/ext/kvcache.bpf.o | $(B)/include
	$(BPFTOOL) gen skeleton $< name kvcache_bpf > $@.tmp && mv $@.tmp $@
$(B)/obj/tools/xvi-kvcache/main.o: $(B)/include/kvcache.skel.h

# ---- C objects ---------------------------------------------------------------
# Every object records the headers it includes (-MMD -MP, $(B)/obj/**/*.d),
# so an edited header rebuilds exactly the objects that use it.  The BPF
# skeletons are generated headers: they exist before any object compiles.
DEP_FLAGS := -MMD -MP
OBJ_CFLAGS = $(CFLAGS)

$(B)/obj/%.o: %.c | $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(OBJ_CFLAGS) $(DEP_FLAGS) -c $< -o $@

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# ---- libxvi ----------------------------------------------------------------
$(LIB_OBJS): OBJ_CFLAGS = $(LIB_CFLAGS)

$(B)/lib/libxvi.a: $(LIB_OBJS) | $(B)/lib
	rm -f $@ && ar rcs $@ $^

$(B)/lib/libxvi.so: $(LIB_OBJS) libxvi/libxvi.map | $(B)/lib
	$(CC) -shared -Wl,--version-script=libxvi/libxvi.map -Wl,-soname,$(SONAME) \
		-o $@ $(LIB_OBJS) $(LDLIBS)

# ---- libxvi-preload.so: UDP socket programs over xvi (xvi-run) --------------
# libxvi linked in and hidden: only the interceptors are exported.
PRELOAD_SRCS := $(wildcard preload/*.c)
PRELOAD_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(PRELOAD_SRCS))
PRELOAD := $(B)/lib/libxvi-preload.so
$(PRELOAD_OBJS): OBJ_CFLAGS = $(LIB_CFLAGS)
all: $(PRELOAD)

$(PRELOAD): $(PRELOAD_OBJS) $(LIB_OBJS) preload/preload.map | $(B)/lib
	$(CC) -shared -Wl,--version-script=preload/preload.map -Wl,-z,defs \
		-o $@ $(PRELOAD_OBJS) $(LIB_OBJS) $(LDLIBS) -ldl

# ---- programs (linked statically against libxvi: they use internal APIs) ---
$(TOOLS_LIB_OBJS): OBJ_CFLAGS = $(CFLAGS) -Itools/lib

$(TOOLS_LIB): $(TOOLS_LIB_OBJS) | $(B)/lib
	rm -f $@ && ar rcs $@ $^

# tools/NAME/*.c -> $(B)/obj/tools/NAME/*.o -> $(B)/bin/NAME, compiled with
# NAME_CFLAGS if a tool needs more.
define tool_rules
$(1)_OBJS := $$(patsubst %.c,$$(B)/obj/%.o,$$(wildcard tools/$(1)/*.c))
$$($(1)_OBJS): OBJ_CFLAGS = $$(CFLAGS) -Itools/$(1) -Itools/lib $$($(1)_CFLAGS)
$$(B)/bin/$(1): $$($(1)_OBJS) $$(TOOLS_LIB) $$(B)/lib/libxvi.a | $$(B)/bin
	$$(CC) -o $$@ $$($(1)_OBJS) $$(TOOLS_LIB) $$(B)/lib/libxvi.a $$(LDLIBS) $$($(1)_LDLIBS)
endef
xdp-vi_CFLAGS := -DXDPVI_VERSION='"$(VERSION)"'
# xdp-vi trace --pcap
xdp-vi_LDLIBS := -lpcap
xvi-run_CFLAGS := -DXVI_RUN_LIBDIR='"$(LIBDIR)"'
$(foreach t,$(TOOL_DIRS),$(eval $(call tool_rules,$(t))))

# xdp-vi --version prints VERSION: rebuild when the Makefile changes.
$(B)/obj/tools/xdp-vi/main.o: Makefile

# ---- tests -----------------------------------------------------------------
UNIT_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(UNIT_SRCS))
XDP_OBJS  := $(patsubst %.c,$(B)/obj/%.o,$(XDP_SRCS))
$(XDP_OBJS): OBJ_CFLAGS = $(CFLAGS) -Itests/xdp

# xdp-vid's policy parser is tested as a unit too: its object links in.
UNIT_TOOL_OBJS := $(B)/obj/tools/xdp-vid/policy.o
$(UNIT_OBJS): OBJ_CFLAGS = $(CFLAGS) -Itools/xdp-vid

$(UNIT_BIN): $(UNIT_OBJS) $(UNIT_TOOL_OBJS) $(B)/lib/libxvi.a | $(B)/tests
	$(CC) -o $@ $(UNIT_OBJS) $(UNIT_TOOL_OBJS) $(B)/lib/libxvi.a $(LDLIBS) -lcriterion

$(XDP_BIN): $(XDP_OBJS) $(B)/lib/libxvi.a | $(B)/tests $(EXT_OBJS)
	$(if $(XDP_SRCS),$(CC) -o $@ $(XDP_OBJS) $(B)/lib/libxvi.a $(LDLIBS) -lcriterion,touch $@)

$(LAB_BINS): $(B)/tests/%: $(B)/obj/tests/lab/%.o $(B)/lib/libxvi.a | $(B)/tests
	$(CC) -o $@ $< $(B)/lib/libxvi.a $(LDLIBS)

$(BENCH_BINS): $(B)/tests/%: $(B)/obj/tests/bench/%.o | $(B)/tests
	$(CC) -pthread -o $@ $< $(BENCH_LDLIBS)
# The bare AF_XDP ceiling program uses libxdp's xsk API (and no libxvi).
$(B)/tests/xsk_bare: BENCH_LDLIBS := -lxdp -lbpf
# The memcached GET client's --xvi mode sends from a libxvi endpoint.
$(B)/tests/kvget: $(B)/lib/libxvi.a
$(B)/tests/kvget: BENCH_LDLIBS := $(B)/lib/libxvi.a $(LDLIBS)
$(patsubst %.c,$(B)/obj/%.o,$(BENCH_SRCS)): OBJ_CFLAGS = $(CFLAGS) -pthread

# ---- fuzzing: libFuzzer targets (clang, ASan + UBSan) -----------------------
# Each target links the library code it reaches, rebuilt with the sanitizers.
# `make test` runs each briefly (tests/fuzz/run.sh via tests/run); deliberate
# fuzzing: `make fuzz FUZZ_TIME=600` (seconds per target, corpus kept in
# $(B)/fuzz/corpus-NAME).
FUZZ_CC     ?= $(CLANG)
FUZZ_TIME   ?= 600
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-std=gnu11 -D_GNU_SOURCE $(WARN) -Iinclude -Ilibxvi -Itools/xdp-vid -I$(B)/include
FUZZ_LIB    := $(filter-out libxvi/stream/api.c,$(wildcard libxvi/stream/*.c)) \
	libxvi/pkt/frame.c libxvi/pkt/csum.c libxvi/common/log.c tools/xdp-vid/request.c

$(B)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB) $(LIB_HDRS) tools/xdp-vid/xvid.h | $(B)/fuzz
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LIB)

.PHONY: fuzz
fuzz: $(FUZZ_BINS)
	FUZZ_TIME=$(FUZZ_TIME) B=$(B) bash tests/fuzz/run.sh --long

$(B)/bpf $(B)/include $(B)/lib $(B)/bin $(B)/tests $(B)/fuzz:
	mkdir -p $@

deps:
	bash scripts/install-deps.sh

test: deps
	$(MAKE) all
	bash tests/run

demo: deps
	$(MAKE) all
	bash netns-lab/demo

bench: deps
	$(MAKE) all
	bash tests/bench/run

# ---- install ---------------------------------------------------------------
# libxvi.pc is written at install time, for the PREFIX and LIBDIR of this
# install; directories under PREFIX are named relative to ${prefix} in it.
# Only the headers an application or an extension handler includes are
# public: xvi_ext.h is both (handlers compile against it, with
# -I$(INCLUDEDIR)/xvi), and its BPF half needs xvi_wire.h, the layouts
# shared with the datapath.
pc_path = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
PUB_HDRS  := include/xvi.h include/xvi_stream.h include/xvi_memnet.h include/xvi_ext.h \
	include/xvi_wire.h
MAN_PAGES := $(wildcard docs/man/*.[1-8])
MAN_SECTS := $(sort $(subst .,,$(suffix $(MAN_PAGES))))
LIB_REAL  := libxvi.so.$(VERSION)
# Every file install writes, without DESTDIR: what uninstall removes.
INSTALLED := $(addprefix $(BINDIR)/,$(notdir $(PROGS))) \
	$(addprefix $(LIBDIR)/,libxvi.a $(LIB_REAL) $(SONAME) libxvi.so pkgconfig/libxvi.pc) \
	$(addprefix $(INCLUDEDIR)/xvi/,$(notdir $(PUB_HDRS))) \
	$(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

# The dynamic linker sees a new or removed library only once ldconfig has
# rebuilt its cache; a DESTDIR is a staging tree, not this system's.
LDCONFIG ?= ldconfig
ldconfig = $(if $(DESTDIR),,$(LDCONFIG) || echo "warning: '$(LDCONFIG)' failed: \
	run ldconfig as root so that programs find $(SONAME)" >&2)

install: $(LIBS) $(PROGS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/xvi \
		$(addprefix $(DESTDIR)$(MANDIR)/man,$(MAN_SECTS))
	install -m 0755 $(PROGS) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(B)/lib/libxvi.a $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(B)/lib/libxvi.so $(DESTDIR)$(LIBDIR)/$(LIB_REAL)
	ln -sf $(LIB_REAL) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libxvi.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|g' \
		-e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
		libxvi/libxvi.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libxvi.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/libxvi.pc
	install -m 0644 $(PUB_HDRS) $(DESTDIR)$(INCLUDEDIR)/xvi/
	$(foreach s,$(MAN_SECTS),install -m 0644 $(filter %.$(s),$(MAN_PAGES)) \
		$(DESTDIR)$(MANDIR)/man$(s)/ &&) true
	$(ldconfig)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	[ ! -d $(DESTDIR)$(INCLUDEDIR)/xvi ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(INCLUDEDIR)/xvi
	$(ldconfig)

clean:
	rm -rf $(B)

# ---- libfabric provider "xvi" (fabric/, docs/SCALE-OUT.md) -------------------
# $(B)/lib/libxvi-fi.so, a DL provider with libxvi linked in, built when
# libfabric's provider header is there (Debian: libfabric-dev).  libfabric
# loads it from FI_PROVIDER_PATH or from its own libdir/libfabric/:
# `make install` puts it in FABRIC_PROVDIR (default $(LIBDIR)/libfabric;
# FABRIC_PROVDIR=/usr/lib/x86_64-linux-gnu/libfabric is where Debian's
# libfabric looks without FI_PROVIDER_PATH).
FABRIC_SRCS := $(wildcard fabric/*.c)
FABRIC_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(FABRIC_SRCS))
FABRIC_LIB  := $(B)/lib/libxvi-fi.so
FABRIC_PROVDIR ?= $(LIBDIR)/libfabric
HAVE_FABRIC := $(shell test -f /usr/include/rdma/providers/fi_prov.h && echo 1)

$(FABRIC_OBJS): OBJ_CFLAGS = $(LIB_CFLAGS) -Ifabric
$(FABRIC_LIB): $(FABRIC_OBJS) $(B)/lib/libxvi.a fabric/libxvi-fi.map | $(B)/lib
	$(CC) -shared -Wl,--version-script=fabric/libxvi-fi.map -Wl,-z,defs -o $@ \
		$(FABRIC_OBJS) $(B)/lib/libxvi.a $(LDLIBS) -lfabric

.PHONY: install-fabric
# The lab's check of what fi_pingpong does not reach (tests/lab/fabric.sh).
$(B)/tests/fi_check: tests/fabric/fi_check.c | $(B)/tests
	$(CC) -O2 -g $(WARN) -std=gnu11 -o $@ $< -lfabric

ifeq ($(HAVE_FABRIC),1)
all: $(FABRIC_LIB) $(B)/tests/fi_check
install: install-fabric
INSTALLED += $(FABRIC_PROVDIR)/libxvi-fi.so
endif
install-fabric: $(FABRIC_LIB)
	install -d $(DESTDIR)$(FABRIC_PROVDIR)
	install -m 0755 $(FABRIC_LIB) $(DESTDIR)$(FABRIC_PROVDIR)/libxvi-fi.so

# The MPI job the fabric suite and the bench run over the provider
# (tests/mpi/), built when Open MPI's mpicc is there (Debian: libopenmpi-dev).
MPICC ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1)
$(B)/tests/mpi_check: tests/mpi/mpi_check.c | $(B)/tests
	$(MPICC) -O2 -g $(WARN) -o $@ $<
ifeq ($(HAVE_MPI),1)
all: $(B)/tests/mpi_check
endif

# ---- libxvi-preload.so (xvi-run finds it at ../lib from its own bin) -------
.PHONY: install-preload uninstall-preload
install: install-preload
uninstall: uninstall-preload
install-preload: $(PRELOAD)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(PRELOAD) $(DESTDIR)$(LIBDIR)/
uninstall-preload:
	rm -f $(DESTDIR)$(LIBDIR)/libxvi-preload.so

# ---- stream-progress: one progress run's cost against connections held ----
# (tests/bench/engine/: it links the library, the other bench drivers not)
STREAM_PROGRESS_OBJ := $(B)/obj/tests/bench/engine/stream_progress.o
$(B)/tests/stream-progress: $(STREAM_PROGRESS_OBJ) $(B)/lib/libxvi.a | $(B)/tests
	$(CC) -o $@ $(STREAM_PROGRESS_OBJ) $(B)/lib/libxvi.a $(LDLIBS)
all: $(B)/tests/stream-progress
