# profharness build.  `make` builds everything into build/; `make check`
# runs the C unit tests (cmocka, TAP-like output).  Sources are picked up by
# directory, so adding a module is adding a file.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wformat=2 -Wshadow -Wno-unused-parameter -Wmissing-prototypes \
           -Wstrict-prototypes -Werror=implicit-function-declaration -Werror=incompatible-pointer-types \
           -Wno-format-truncation # buffers are bounded on purpose; truncation is handled
PKGS    := libcurl yaml-0.1 libarchive jansson zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
# The library's floors, bottom up: util (errors, logs, strings, YAML),
# timing (the harness timing itself; everything above may use it), then
# symbol (naming frames: perf maps), flame, tar, engine, compose, backend
# (what the loop asks of an orchestrator; the Engine backend), profile,
# image (service, profiling and tools images, built through the Engine),
# report (artifacts to HTML and JSON summaries), rundir (the run-dir store:
# reserved names, the order a run is completed in, the profile it was
# started with), then run (the loop).  A floor includes only floors below it.
LIB_DIRS := util timing symbol flame tar engine compose backend profile image report rundir run
CPPFLAGS += -D_GNU_SOURCE $(addprefix -Iharness/,$(LIB_DIRS)) -Iharness/sampler
B := build

# The fake backend (an orchestrator in memory) is the unit tests' alone:
# linked into each test binary, never into the library or the CLI.
FAKE_SRC := $(wildcard harness/backend/ph_backend_fake*.c)
LIB_SRC := $(filter-out $(FAKE_SRC),$(foreach d,$(LIB_DIRS),$(wildcard harness/$(d)/*.c)))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
FAKE_OBJ := $(FAKE_SRC:%.c=$(B)/%.o)
CLI_SRC := $(wildcard harness/cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/%.o)
SAMPLER_SRC := $(wildcard harness/sampler/*.c)
# The sampler draws its own flamegraphs: the renderer and the error type are
# compiled into it (position-independent), nothing else of the library.
# ph_folded is the renderer's parser, ph_lines its line splitter and
# ph_intern its string table; ph_escape is what ph_error prints through;
# ph_markup (and its ph_sha256) the writer every SVG goes through.
# ph_perfmap names JIT code as the perf conversion does, ph_gopclntab
# stripped Go programs.
SAMPLER_PIC := $(SAMPLER_SRC:%.c=$(B)/pic/%.o) $(B)/pic/harness/flame/ph_flame.o \
               $(B)/pic/harness/symbol/ph_perfmap.o $(B)/pic/harness/symbol/ph_gopclntab.o \
               $(B)/pic/harness/util/ph_error.o $(B)/pic/harness/util/ph_escape.o \
               $(B)/pic/harness/flame/ph_folded.o $(B)/pic/harness/util/ph_lines.o \
               $(B)/pic/harness/util/ph_intern.o $(B)/pic/harness/util/ph_markup.o \
               $(B)/pic/harness/util/ph_sha256.o
# zlib is linked in (Debian's libz.a is position-independent): the sampler
# then loads into a service whose image has no zlib (distroless).
# libdl, libpthread and librt are needed by name: on a glibc before 2.34
# the functions ph_sampler_glibc.h binds to their old versions are there.
SAMPLER_LIBS := -Wl,-Bstatic -lz -Wl,-Bdynamic -Wl,--push-state,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 -l:librt.so.1 -Wl,--pop-state -lm
# The demanglers come from libiberty (libiberty-dev: a static, PIC archive):
# only their three objects are taken, into both sampler libraries, so a
# service linking libphsampler.a needs nothing more.  cp-demangle.c and
# rust-demangle.c carry GCC's linking exception.
LIBIBERTY := $(shell $(CC) -print-file-name=libiberty.a)
IBERTY_OBJ := $(addprefix $(B)/iberty/,cp-demangle.o rust-demangle.o safe-ctype.o)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
# Unit suites that need a swarm: run by the bats file that makes one
# (tests/72-swarm-bed.bats), never by run-unit.sh's build/tests/test_*.
BED_TEST_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/bed/test_*.c))

# The sampler is optional until its sources exist.
SAMPLER_TARGETS := $(if $(SAMPLER_SRC),$(B)/libphsampler.so $(B)/libphsampler.a $(B)/libphsampler-musl.so)

# The sampler for musl images (Alpine): the same sources compiled by
# Debian's musl-gcc (musl-tools), without ph_sampler_glibc.h (musl has no
# symbol versions), loaded by musl's loader.  musl-gcc searches musl's
# headers only: glibc's tree comes after them, for the headers of libdw,
# libiberty and zlib and the kernel's asm/.  Debian's libz.a and libiberty
# objects are glibc's, fortified: musl/ph_sampler_fortify.c gives them the
# three __*printf_chk they call.  musl-gcc's specs link without
# --eh-frame-hdr, which gcc (Alpine's too) passes: the unwind tables are
# found through it, so it is asked for.
MUSL_CC ?= musl-gcc
MULTIARCH := $(shell $(CC) -dumpmachine)
SAMPLER_MUSL_PIC := $(SAMPLER_PIC:$(B)/pic/%=$(B)/musl/pic/%) $(B)/musl/pic/harness/sampler/musl/ph_sampler_fortify.o
LIBZ_A := $(shell $(CC) -print-file-name=libz.a)

all: $(B)/profharness $(B)/ph-init $(B)/ph-jattach $(B)/ph-pyattach $(B)/ph-nodeinsp $(B)/demo-load $(SAMPLER_TARGETS)

$(B)/demo-load: images/demo/load.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $<

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

# Every object of the sampler binds glibc's functions as old glibcs have
# them (ph_sampler_glibc.h): the library loads into older images than ours.
$(SAMPLER_PIC): harness/sampler/ph_sampler_glibc.h
$(B)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -include harness/sampler/ph_sampler_glibc.h -fPIC -fno-omit-frame-pointer -MMD -MP -c -o $@ $<

$(B)/musl/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -idirafter /usr/include -idirafter /usr/include/$(MULTIARCH) -fPIC -fno-omit-frame-pointer -MMD -MP -c -o $@ $<

$(B)/libprofharness.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/profharness: $(CLI_OBJ) $(B)/libprofharness.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(B)/libprofharness.a $(PKG_LIBS) -lpthread -lm

# The init shim is PID 1 of every profiled container, whatever libc the
# service image has: static, and nothing but libc.
$(B)/ph-init: $(wildcard harness/shim/*.c harness/shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -static -o $@ $(filter %.c,$^)

# ph-jattach asks a running JVM for its perf map over HotSpot's attach
# socket, from the tools volume in whatever image the service has, and
# (`files`) reaches its files inside its own root: static too, and
# nothing but libc.
$(B)/ph-jattach: $(wildcard harness/attach/*.c harness/attach/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iharness/attach $(CFLAGS) $(WARN) -static -o $@ $(filter %.c,$^)

# ph-pyattach reads a running CPython's frames from outside it, in the
# tools container of an attach (images/tools/ph-attach-sampler): the
# sampler's frame reader (ph_sampler_py.c, compiled here as a plain object)
# over the target's memory and symbols, the library's renderer and pprof
# writer; static, as the tools tree's own programs.  The target's files
# are opened inside its root (ph_inroot.c, ph-jattach's too).
PYATTACH_OBJ := $(patsubst %.c,$(B)/%.o,$(filter-out %/ph-pyattach.c,$(wildcard harness/pyattach/*.c))) \
                $(B)/harness/sampler/ph_sampler_py.o $(B)/harness/attach/ph_inroot.o
$(PYATTACH_OBJ) $(B)/harness/pyattach/ph-pyattach.o: private CPPFLAGS += -Iharness/pyattach -Iharness/attach
ifndef SANITIZE
$(B)/ph-pyattach: $(B)/harness/pyattach/ph-pyattach.o $(PYATTACH_OBJ) $(B)/libprofharness.a
	$(CC) $(CFLAGS) -static -o $@ $^ -lz -lm
endif
$(B)/tests/test_pyattach: private CPPFLAGS += -Iharness/pyattach -Iharness/attach
$(B)/tests/test_pyattach: tests/unit/test_pyattach.c $(PYATTACH_OBJ) $(B)/libprofharness.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(PYATTACH_OBJ) $(B)/libprofharness.a -lz -lcmocka -lm

# The attach protocol's pure parts, compiled into their test.
$(B)/tests/test_jattach: harness/attach/ph_jattach.c harness/attach/ph_jattach.h
$(B)/tests/test_jattach: private CPPFLAGS += -Iharness/attach

# ph-nodeinsp drives a running Node's own inspector from the tools
# container of an attach (attach --mode flamegraph, wall): static, as the
# tools tree's own programs; the wall mode's files (ph_stackset: the
# library's renderer and pprof writer) as ph-pyattach writes them.
ifndef SANITIZE
$(B)/ph-nodeinsp: $(wildcard harness/nodeinsp/*.c harness/nodeinsp/*.h) $(B)/libprofharness.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iharness/nodeinsp $(CFLAGS) $(WARN) -static -o $@ $(filter %.c,$^) $(B)/libprofharness.a -lz -lm
endif

# The inspector session's pure parts (framing, the profile), in their test.
$(B)/tests/test_cdp: harness/nodeinsp/ph_cdp.c harness/nodeinsp/ph_cdp.h
$(B)/tests/test_cdp: private CPPFLAGS += -Iharness/nodeinsp

$(IBERTY_OBJ): $(LIBIBERTY)
	@mkdir -p $(dir $@)
	cd $(dir $@) && ar x $(LIBIBERTY) $(notdir $@) && touch $(notdir $@)

# -z now: every symbol bound at load, so the signal handler's first call
# to a libc function (write, memcpy...) never goes through the lazy
# binder, which saves the whole vector state on the (alternate) signal
# stack: ~3 KiB of Go's 32 KiB, measured (test_sampler_sig).
$(B)/libphsampler.so: $(SAMPLER_PIC) $(IBERTY_OBJ) harness/sampler/exports.map Makefile
	$(CC) -shared -Wl,-z,defs -Wl,-z,now -Wl,--version-script=harness/sampler/exports.map -o $@ $(filter %.o,$^) $(SAMPLER_LIBS)

$(B)/libphsampler-musl.so: $(SAMPLER_MUSL_PIC) $(IBERTY_OBJ) harness/sampler/exports.map Makefile
	$(MUSL_CC) -shared -Wl,--eh-frame-hdr -Wl,-z,defs -Wl,-z,now -Wl,--version-script=harness/sampler/exports.map -o $@ $(filter %.o,$^) $(LIBZ_A) -lm

$(B)/libphsampler.a: $(SAMPLER_PIC) $(IBERTY_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/tests/%: tests/unit/%.c $(FAKE_OBJ) $(B)/libprofharness.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PKG_CFLAGS) -o $@ $< $(FAKE_OBJ) $(B)/libprofharness.a \
	    $(PKG_LIBS) -lpthread -lcmocka -lm

# The unwind tables' test compiles their source in (its functions are
# hidden), under AddressSanitizer: the signal path's reads are unchecked.
$(B)/tests/test_sampler_cfi: harness/sampler/ph_sampler_cfi.c harness/sampler/ph_sampler_int.h
$(B)/tests/test_sampler_cfi: private CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all

# The symbol tables' test compiles their source in (hidden in the
# library) and takes the rest of the sampler from its archive.
$(B)/tests/test_sampler_syms: tests/unit/test_sampler_syms.c harness/sampler/ph_sampler_out.c harness/sampler/ph_sampler_int.h $(B)/libphsampler.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -include harness/sampler/ph_sampler_glibc.h $(CFLAGS) $(WARN) -o $@ $< $(B)/libphsampler.a \
	    $(SAMPLER_LIBS) -lcmocka

# The Python layout checked with offsetof against CPython 3.11's own
# headers, where python3.11-dev installed them (skipped elsewhere).
PY311_INC := $(wildcard /usr/include/python3.11/internal/pycore_frame.h)
$(B)/tests/test_sampler_py: private CPPFLAGS += $(if $(PY311_INC),-DPH_HAVE_PY311_HEADERS -I/usr/include/python3.11)
$(B)/tests/test_sampler_py: harness/sampler/ph_sampler_pylayout.h tests/unit/helpers/fakepy_layouts.h

# The heap sampler's arithmetic is tested as the allocation path compiles it.
$(B)/tests/test_sampler_heap: harness/sampler/ph_sampler_heapmath.h

# The JNI and JVMTI slots checked against a JDK's own headers, where one
# is installed (skipped elsewhere).
JDK_INC := $(patsubst %/jvmti.h,%,$(firstword $(wildcard /usr/lib/jvm/*/include/jvmti.h)))
$(B)/tests/test_sampler_java: private CPPFLAGS += $(if $(JDK_INC),-DPH_HAVE_JVMTI_HEADERS -I$(JDK_INC) -I$(JDK_INC)/linux)
$(B)/tests/test_sampler_java: harness/sampler/ph_sampler_jvmti.h

# Small programs the unit tests run (signal echoers, workloads).
HELPER_SRC := $(wildcard tests/unit/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/unit/helpers/%.c=$(B)/tests/helpers/%)
$(B)/tests/helpers/%: tests/unit/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< -lpthread -lm

# Libraries the unit tests preload in front of the sampler.
HELPER_BIN += $(B)/tests/preload/pollrace.so
$(B)/tests/preload/%.so: tests/unit/preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -fPIC -shared $(WARN) -o $@ $< -ldl

# The fake CPythons share their eval loop and the versions' layouts; the
# bad 3.13 is the good one with another cookie, the 3.8 and 3.7 the 3.10
# built as those versions, the 3.10 "as 3.9" it saying it is a 3.9.
FAKEPY_H := tests/unit/helpers/fakepy_eval.h tests/unit/helpers/fakepy_layouts.h
$(B)/tests/helpers/sampler_fakepy $(B)/tests/helpers/sampler_fakepy313 $(B)/tests/helpers/sampler_fakepy310 \
    $(B)/tests/helpers/sampler_fakepy312: $(FAKEPY_H)
$(B)/tests/helpers/sampler_fakepy313_bad: $(FAKEPY_H) tests/unit/helpers/sampler_fakepy313.c
$(B)/tests/helpers/sampler_fakepy38 $(B)/tests/helpers/sampler_fakepy37 $(B)/tests/helpers/sampler_fakepy310_as39 \
    $(B)/tests/helpers/sampler_fakepy310_prealloc: \
    $(FAKEPY_H) tests/unit/helpers/sampler_fakepy310.c

# The wall-clock test service (tests/wall/svc), a workload of the
# sampler's tests too.
HELPER_BIN += $(B)/tests/helpers/sampler_wall
$(B)/tests/helpers/sampler_wall: tests/wall/svc/wall.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $<

# The wall mode's EINTR service (tests/wall/svc), a workload of the
# sampler's tests too.
HELPER_BIN += $(B)/tests/helpers/sampler_eintr
$(B)/tests/helpers/sampler_eintr: tests/wall/svc/eintr.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -fno-omit-frame-pointer -pthread $(WARN) -o $@ $<

# The wall mode's cost workload (tests/bench), idle threads' wakes counted.
HELPER_BIN += $(B)/tests/helpers/sampler_wall_idle
$(B)/tests/helpers/sampler_wall_idle: tests/bench/wall_idle.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O1 -g -fno-omit-frame-pointer -pthread $(WARN) -o $@ $<

# The unwinding tests need code without frame pointers, as distributions
# build it.
$(B)/tests/helpers/sampler_nofp: tests/unit/helpers/sampler_nofp.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O2 -g -fomit-frame-pointer $(WARN) -o $@ $<

# The heap mode's workload, the one the container of tests/68-heap.bats runs.
HELPER_BIN += $(B)/tests/helpers/heapwork
$(B)/tests/helpers/heapwork: tests/data/heap/heapwork.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O2 -g $(WARN) -o $@ $< -lpthread
# ... and built for musl, run on its loader here (musl-tools gives both),
# for the musl build of the sampler
HELPER_BIN += $(B)/tests/helpers/heapwork-musl
$(B)/tests/helpers/heapwork-musl: tests/data/heap/heapwork.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -O2 -g $(WARN) -Wl,--eh-frame-hdr -o $@ $<

# Go programs for test_gopclntab: the language test's Go service built by
# golang-go stripped three ways (-s -w static and PIE; cgo, then binutils'
# strip, as distributions do), and the same programs with their symbols,
# whose `go tool nm -size` is the test's oracle.
GO_SRC := $(wildcard tests/lang/go/*.go)
GO_TEST := $(B)/tests/go
HELPER_BIN += $(GO_TEST)/built
$(GO_TEST)/built: $(GO_SRC)
	@rm -rf $(GO_TEST)/src && mkdir -p $(GO_TEST)/src
	cp $(GO_SRC) $(GO_TEST)/src/ && printf 'module lang\n\ngo 1.19\n' > $(GO_TEST)/src/go.mod
	cd $(GO_TEST)/src && export GOCACHE=$(abspath $(GO_TEST))/cache GOFLAGS=-buildvcs=false && \
	  CGO_ENABLED=0 go build -o ../static . && CGO_ENABLED=0 go build -ldflags='-s -w' -o ../static-sw . && \
	  CGO_ENABLED=0 go build -buildmode=pie -o ../pie . && \
	  CGO_ENABLED=0 go build -buildmode=pie -ldflags='-s -w' -o ../pie-sw . && \
	  CGO_ENABLED=1 go build -o ../cgo . && strip -o ../cgo-strip ../cgo && \
	  for b in static pie cgo; do go tool nm -size ../$$b > ../$$b.nm || exit 1; done
	touch $@
$(B)/tests/test_gopclntab $(B)/tests/test_sampler $(B)/tests/test_collapse: | $(GO_TEST)/built
$(B)/tests/test_gopclntab $(B)/tests/test_sampler $(B)/tests/test_collapse: private CPPFLAGS += -DGO_DIR='"$(GO_TEST)"'

tests-build: all $(TEST_BIN) $(BED_TEST_BIN) $(HELPER_BIN)

# Each unit test binary prints its own cmocka summary; tests/run-unit.sh
# adds them up.
check: tests-build
	tests/run-unit.sh $(TEST_BIN)

clean:
	rm -rf $(B)

# Install like a tool (FHS): the binary finds the rest relative to itself
# (harness/util/ph_paths.h), so PREFIX can be anywhere and DESTDIR stages.
PREFIX  ?= /usr/local
BINDIR  := $(PREFIX)/bin
LIBDIR  := $(PREFIX)/lib/profharness
DATADIR := $(PREFIX)/share/profharness
INCDIR  := $(PREFIX)/include/profharness

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DATADIR)/profiles $(DESTDIR)$(DATADIR)/images
	install -m 0755 $(B)/profharness $(DESTDIR)$(BINDIR)/profharness
	install -m 0755 $(B)/ph-init $(DESTDIR)$(LIBDIR)/ph-init
	install -m 0755 $(B)/ph-jattach $(DESTDIR)$(LIBDIR)/ph-jattach
	install -m 0755 $(B)/ph-pyattach $(DESTDIR)$(LIBDIR)/ph-pyattach
	install -m 0755 $(B)/ph-nodeinsp $(DESTDIR)$(LIBDIR)/ph-nodeinsp
	install -m 0644 profiles/*.yaml $(DESTDIR)$(DATADIR)/profiles/
	install -m 0644 profharness.just $(DESTDIR)$(DATADIR)/profharness.just
	cp -R images/. $(DESTDIR)$(DATADIR)/images/
	chmod -R u+w,go-w,a+rX $(DESTDIR)$(DATADIR)/images
ifneq ($(SAMPLER_TARGETS),)
	install -d $(DESTDIR)$(INCDIR)
	install -m 0755 $(B)/libphsampler.so $(DESTDIR)$(LIBDIR)/libphsampler.so
	install -m 0755 $(B)/libphsampler-musl.so $(DESTDIR)$(LIBDIR)/libphsampler-musl.so
	install -m 0644 $(B)/libphsampler.a $(DESTDIR)$(LIBDIR)/libphsampler.a
	install -m 0644 harness/sampler/ph_sampler.h $(DESTDIR)$(INCDIR)/ph_sampler.h
endif

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/profharness
	rm -rf $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(INCDIR)

.PHONY: all check clean tests-build install uninstall
-include $(shell find $(B) -name '*.d' 2>/dev/null)

# ---- Sanitizers and fuzzing (docs/testing.md) ------------------------------
# Both are kept apart from build/, and both use clang: its runtimes link
# into executables without LD_PRELOAD order games, and its minimal UBSan
# runtime links statically.
#
# `make sanitize` (= make SANITIZE=1 B=build-san all tests-build): the
# library, the CLI, the unit tests and demo-load with AddressSanitizer,
# LeakSanitizer and UBSan, except where the process is not ours to arrange:
#   ph-init is static (PID 1 in images of any libc) and ASan does not link
#     statically: UBSan only, with the minimal runtime ("ubsan: <check>",
#     then abort), which does; ph-jattach (static, nothing but libc) too;
#   ph-pyattach and ph-nodeinsp are static and link the library, which is
#     ASan's here: they are build/'s (made by a plain make of their own),
#     copied;
#   libphsampler.so is preloaded into programs not built with ASan, whose
#     runtime must come first in a process: UBSan only, in trap mode (no
#     runtime at all; a finding is SIGILL in the host program);
#   libphsampler-musl.so is musl-gcc's, which no sanitizer runtime serves:
#     built as in build/;
#   the unit tests' helper programs are the workloads the sampler is
#     preloaded into, and the sampler tests read their debug info: built as
#     in build/, same compiler and flags.
SAN_CC := clang
SAN_ALL := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_SHIM := -fsanitize=undefined -fsanitize-minimal-runtime -fno-sanitize-recover=all
SAN_SAMPLER := -fsanitize=undefined -fsanitize-trap=undefined
# gcc's -Wno-format-truncation means nothing to clang, which says so.
# clang also counts a positional initializer of a nested struct, `{ "k", "v" }`,
# as missing fields where gcc does not: gcc's build holds that line.
CLANG_WARN := $(filter-out -Wno-format-truncation,$(WARN)) -Wno-missing-field-initializers

ifdef SANITIZE
HOST_CC := $(CC)
HOST_WARN := $(WARN)
CC := $(SAN_CC)
WARN := $(CLANG_WARN)
$(B)/tests/helpers/%: CC := $(HOST_CC)
$(B)/tests/helpers/%: WARN := $(HOST_WARN)
CFLAGS := -O1 -g $(SAN_ALL)
$(B)/ph-init $(B)/ph-jattach: CFLAGS := -O1 -g $(SAN_SHIM)
$(B)/ph-pyattach $(B)/ph-nodeinsp: FORCE
	$(MAKE) SANITIZE= B=build build/$(notdir $@)
	@mkdir -p $(dir $@)
	cp build/$(notdir $@) $@
# -O2 for the sampler: a new thread's start goes through ours as a tail
# call, so no frame of ours stays under the thread's (clang makes it at -O2).
$(B)/pic/%.o: CFLAGS := -O2 -g $(SAN_SAMPLER)
# musl's sampler is musl-gcc's, for which no sanitizer has a runtime: as in build/.
$(B)/musl/pic/%.o: CFLAGS := -O2 -g
$(B)/musl/pic/%.o: WARN := $(HOST_WARN)
endif

sanitize:
	$(MAKE) SANITIZE=1 B=build-san all tests-build

# `make fuzz`: every tests/fuzz/fuzz_<name>.c (a libFuzzer target using the
# library's public headers) -> build-fuzz/fuzz_<name>, the library compiled
# for coverage with ASan and UBSan, each target linked with libFuzzer.
# Adding a target is adding a file; `make build-fuzz/fuzz_NAME` builds one.
F := build-fuzz
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(F)/%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(F)/obj/%.o)

$(F)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(CLANG_WARN) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

$(F)/libprofharness.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# libFuzzer declares the entry point; the targets need no prototype of it.
$(F)/fuzz_%: tests/fuzz/fuzz_%.c $(F)/libprofharness.a
	$(SAN_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(CLANG_WARN) -Wno-missing-prototypes $(PKG_CFLAGS) \
	    -MMD -MP -MF $@.d -o $@ $< $(F)/libprofharness.a $(PKG_LIBS) -lpthread -lm

fuzz: $(FUZZ_BIN)

.PHONY: sanitize fuzz FORCE
FORCE:
-include $(shell find $(F) -name '*.d' 2>/dev/null)
