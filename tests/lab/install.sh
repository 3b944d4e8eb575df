#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# install.sh: make install and make uninstall as an application developer
# sees them, into a temporary DESTDIR with PREFIX=/usr (no lab needed):
#   - the files land under DESTDIR/usr: the programs, libxvi.a, libxvi.so.VERSION
#     with its soname links, libxvi.pc, the public headers only, the man pages,
#     the libfabric provider lib/libfabric/libxvi-fi.so (with libfabric-dev);
#   - the installed libxvi.pc names the install's prefix, not the build's, and
#     its --static libraries cover every dependency of libxvi.a;
#   - the README's example (tests/install/readme_example.c) builds from the
#     DESTDIR with nothing but pkg-config, against libxvi.so and against
#     libxvi.a, and both run: opening an interface that does not exist fails
#     with ENODEV and a libxvi message (nothing needs root);
#   - the installed xdp-vi --version prints the version (include/xvi.h), its
#     own and the library's;
#   - ldconfig (LDCONFIG, a recording stand-in here) runs after install and
#     uninstall with an empty DESTDIR, never with one;
#   - make uninstall leaves nothing in DESTDIR but empty directories.

# shellcheck source=tests/lab/_tap.sh
. "$(dirname "$0")/_tap.sh"

I_PREFIX=/usr
I_DEST=$T_TMP/dest
I_ROOT=$I_DEST$I_PREFIX
# The version is written once, in include/xvi.h.
_xvi_ver() { sed -n "s/^#define XVI_VERSION_$1[[:space:]]*\([0-9]*\).*/\1/p" "$T_ROOT/include/xvi.h"; }
I_VERSION=$(_xvi_ver MAJOR).$(_xvi_ver MINOR).$(_xvi_ver PATCH)
I_SONAME=libxvi.so.${I_VERSION%%.*}
I_EXAMPLE=$T_ROOT/tests/install/readme_example.c
I_NODEV=xvinone0
I_LDCONFIG=$T_TMP/ldconfig
I_CALLS=$T_TMP/ldconfig.calls

# make TARGET [VAR=VALUE...] in the source tree, with this suite's build
# directory and the recording ldconfig; output to stderr.
_make() {
	make -s -C "$T_ROOT" B="$T_B" LDCONFIG="$I_LDCONFIG" "$@" >&2
}

_calls() { wc -l <"$I_CALLS"; }

# The names in a directory, sorted, on one line.
_names() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | paste -sd' '; }

# pkg-config as a developer points it at the DESTDIR (a case may point it
# elsewhere with local PC_SYSROOT and PC_PATH).
PC_SYSROOT=$I_DEST
PC_PATH=$I_ROOT/lib/pkgconfig
_pc() { PKG_CONFIG_SYSROOT_DIR=$PC_SYSROOT PKG_CONFIG_PATH=$PC_PATH pkg-config "$@"; }

# cc with warnings as errors and the installed .pc's cflags; errors in $CC_ERR.
_cc() {
	local cflags
	read -ra cflags < <(_pc --cflags libxvi)
	CC_ERR=$("${CC:-cc}" -std=gnu11 -Wall -Wextra -Werror "${cflags[@]}" "$@" 2>&1)
}

t_setup() {
	printf '#!/bin/sh\necho "ldconfig $*" >>"%s"\n' "$I_CALLS" >"$I_LDCONFIG"
	chmod +x "$I_LDCONFIG"
	: >"$I_CALLS"
	_make install DESTDIR="$I_DEST" PREFIX="$I_PREFIX" ||
		{ fail "make install DESTDIR=$I_DEST PREFIX=$I_PREFIX failed"; return 1; }
	I_DEST_CALLS=$(cat "$I_CALLS")
}

case_files() {
	local f want=() got t lib=$I_ROOT/lib hdrs
	# every tools/NAME/ is a program (xdp-vi among them), but tools/lib/
	for t in "$T_ROOT"/tools/*/; do [ "$(basename "$t")" = lib ] || want+=("$(basename "$t")"); done
	for f in "${want[@]}"; do
		[ -x "$I_ROOT/bin/$f" ] || { fail "bin/$f not installed"; return 1; }
	done
	[ -f "$lib/libxvi.a" ] || { fail "lib/libxvi.a not installed"; return 1; }
	# The libfabric provider, where it is built (libfabric-dev present).
	[ ! -f /usr/include/rdma/providers/fi_prov.h ] || [ -x "$lib/libfabric/libxvi-fi.so" ] ||
		{ fail "lib/libfabric/libxvi-fi.so not installed"; return 1; }
	if [ ! -f "$lib/libxvi.so.$I_VERSION" ] || [ -L "$lib/libxvi.so.$I_VERSION" ]; then
		fail "lib/libxvi.so.$I_VERSION is not a file"
		return 1
	fi
	[ "$(readlink "$lib/$I_SONAME")" = "libxvi.so.$I_VERSION" ] ||
		{ fail "lib/$I_SONAME -> '$(readlink "$lib/$I_SONAME")', want libxvi.so.$I_VERSION"; return 1; }
	[ "$(readlink "$lib/libxvi.so")" = "$I_SONAME" ] ||
		{ fail "lib/libxvi.so -> '$(readlink "$lib/libxvi.so")', want $I_SONAME"; return 1; }
	readelf -d "$lib/libxvi.so.$I_VERSION" | grep -q "SONAME.*\[$I_SONAME\]" ||
		{ fail "libxvi.so.$I_VERSION has no SONAME $I_SONAME"; return 1; }
	[ -f "$lib/pkgconfig/libxvi.pc" ] || { fail "lib/pkgconfig/libxvi.pc not installed"; return 1; }
	got=$(_names "$I_ROOT/include/xvi")
	hdrs="xvi.h xvi_ext.h xvi_memnet.h xvi_stream.h xvi_wire.h"
	[ "$got" = "$hdrs" ] ||
		{ fail "include/xvi/ holds '$got', want the public headers $hdrs"; return 1; }
	for f in "$T_ROOT"/docs/man/*.[1-8]; do
		t=share/man/man${f##*.}/$(basename "$f")
		[ -f "$I_ROOT/$t" ] || { fail "$t not installed"; return 1; }
	done
	got=$(_names "$I_DEST")
	[ "$got" = "${I_PREFIX#/}" ] || { fail "DESTDIR holds '$got', not only ${I_PREFIX#/}/"; return 1; }
}

case_pc() {
	local pc=$I_ROOT/lib/pkgconfig/libxvi.pc v l
	sed 's/^/# libxvi.pc: /' "$pc" >&2
	grep -qx "prefix=$I_PREFIX" "$pc" ||
		{ fail "libxvi.pc: '$(grep '^prefix=' "$pc")', want prefix=$I_PREFIX"; return 1; }
	v=$(PKG_CONFIG_PATH=$I_ROOT/lib/pkgconfig pkg-config --variable=libdir libxvi)
	[ "$v" = "$I_PREFIX/lib" ] || { fail "libdir '$v', want $I_PREFIX/lib"; return 1; }
	v=$(_pc --modversion libxvi)
	[ "$v" = "$I_VERSION" ] || { fail "Version '$v', want $I_VERSION"; return 1; }
	v=$(_pc --static --libs libxvi) || { fail "pkg-config --static --libs libxvi failed"; return 1; }
	t_log "--static --libs: $v"
	for l in -lxvi -lxdp -lbpf -lmnl -lelf -lz -lpthread -lm; do
		[[ " $v " == *" $l "* ]] || { fail "pkg-config --static --libs lacks $l: $v"; return 1; }
	done
}

# Each public header compiles on its own from the DESTDIR: none needs a
# header that is not installed.
case_headers() {
	local h
	for h in "$I_ROOT"/include/xvi/*.h; do
		echo "#include <xvi/$(basename "$h")>" >"$T_TMP/hdr.c"
		_cc -c "$T_TMP/hdr.c" -o /dev/null ||
			{ fail "xvi/$(basename "$h") alone: $(head -c 300 <<<"$CC_ERR")"; return 1; }
	done
}

case_version() {
	local o
	for o in --version -V; do
		[ "$("$I_ROOT/bin/xdp-vi" "$o")" = "xdp-vi $I_VERSION (libxvi $I_VERSION)" ] ||
			{ fail "xdp-vi $o printed '$("$I_ROOT/bin/xdp-vi" "$o" 2>&1)', want 'xdp-vi $I_VERSION (libxvi $I_VERSION)'"; return 1; }
	done
}

# _example NAME LIBS...: build the README's example with LIBS as $T_TMP/NAME.
_example() {
	local out=$T_TMP/$1
	shift
	_cc -o "$out" "$I_EXAMPLE" "$@" ||
		{ fail "build with $*: $(head -c 400 <<<"$CC_ERR")"; return 1; }
}

# _run_example NAME [VAR=VALUE...]: run it on a missing interface; it must
# fail the open with ENODEV, libxvi saying why.
_run_example() {
	local bin=$T_TMP/$1 rc
	shift
	env "$@" "$bin" "$I_NODEV" >"$T_TMP/ex.out" 2>"$T_TMP/ex.err" && rc=0 || rc=$?
	sed 's/^/# example: /' "$T_TMP/ex.out" "$T_TMP/ex.err" >&2
	[ $rc = 1 ] || { fail "example exit $rc, want 1: $(head -c 300 "$T_TMP/ex.err")"; return 1; }
	if ! grep -q "libxvi: $I_NODEV: no such interface" "$T_TMP/ex.err" ||
		! grep -q "No such device (errno 19)" "$T_TMP/ex.err"; then
		fail "example said '$(head -c 300 "$T_TMP/ex.err")', want ENODEV and libxvi's message"
		return 1
	fi
}

case_dynamic() {
	local lib libs
	read -ra libs < <(_pc --libs libxvi)
	_example ex-dynamic "${libs[@]}" || return 1
	readelf -d "$T_TMP/ex-dynamic" | grep -q "NEEDED.*\[$I_SONAME\]" ||
		{ fail "example does not need $I_SONAME"; return 1; }
	lib=$(LD_LIBRARY_PATH=$I_ROOT/lib ldd "$T_TMP/ex-dynamic" | awk -v s="$I_SONAME" '$1 == s {print $3}')
	[ "$lib" = "$I_ROOT/lib/$I_SONAME" ] ||
		{ fail "example loads $I_SONAME from '$lib', not the DESTDIR"; return 1; }
	_run_example ex-dynamic LD_LIBRARY_PATH="$I_ROOT/lib"
}

# libxvi.a with every library the .pc names for a static link: any missing
# dependency is an undefined reference.  (Debian ships no libmnl.a, so a
# fully static binary, cc -static, cannot be linked.)
case_static() {
	local libs
	read -ra libs < <(_pc --static --libs libxvi)
	_example ex-static "${libs[@]/#-lxvi/-l:libxvi.a}" || return 1
	readelf -d "$T_TMP/ex-static" | grep -q 'NEEDED.*libxvi' &&
		{ fail "example links libxvi.so, not libxvi.a"; return 1; }
	_run_example ex-static
}

# With PREFIX=/usr the DESTDIR's usr/include also comes from the sysroot
# applied to libbpf's and libxdp's .pc: only a prefix of its own shows that
# libxvi's cflags alone find <xvi/xvi.h>.
case_prefix() {
	local d=$T_TMP/opt PC_SYSROOT='' PC_PATH=$T_TMP/opt/lib/pkgconfig libs
	_make install DESTDIR= PREFIX="$d" || { fail "make install PREFIX=$d failed"; return 1; }
	read -ra libs < <(_pc --libs libxvi)
	_example ex-prefix "${libs[@]}" || return 1
	_run_example ex-prefix LD_LIBRARY_PATH="$d/lib" || return 1
	_make uninstall DESTDIR= PREFIX="$d" || { fail "make uninstall PREFIX=$d failed"; return 1; }
}

case_ldconfig() {
	local d=$T_TMP/direct n0 n
	[ -z "$I_DEST_CALLS" ] || { fail "install with DESTDIR ran ldconfig: $I_DEST_CALLS"; return 1; }
	n0=$(_calls)
	_make install DESTDIR= PREFIX="$d" || { fail "make install PREFIX=$d failed"; return 1; }
	[ -f "$d/lib/libxvi.so.$I_VERSION" ] || { fail "nothing installed under $d"; return 1; }
	n=$(($(_calls) - n0))
	[ "$n" = 1 ] || { fail "install without DESTDIR ran ldconfig $n times, want 1"; return 1; }
	_make uninstall DESTDIR= PREFIX="$d" || { fail "make uninstall PREFIX=$d failed"; return 1; }
	n=$(($(_calls) - n0 - 1))
	[ "$n" = 1 ] || { fail "uninstall without DESTDIR ran ldconfig $n times, want 1"; return 1; }
	[ -z "$(find "$d" ! -type d)" ] ||
		{ fail "uninstall left $(find "$d" ! -type d | head -5 | paste -sd' ')"; return 1; }
}

case_uninstall() {
	local n left
	n=$(_calls)
	_make uninstall DESTDIR="$I_DEST" PREFIX="$I_PREFIX" ||
		{ fail "make uninstall DESTDIR=$I_DEST PREFIX=$I_PREFIX failed"; return 1; }
	left=$(cd "$I_DEST" && find . ! -type d | head -10 | paste -sd' ')
	[ -z "$left" ] || { fail "uninstall left $left"; return 1; }
	[ "$(_calls)" = "$n" ] || { fail "uninstall with DESTDIR ran ldconfig"; return 1; }
}

# shellcheck disable=SC2034 # read by t_main
CASES=(
	files     case_files     "install puts programs, libxvi.a, libxvi.so.VERSION and its soname links, libxvi.pc, the public headers and man pages under DESTDIR/usr"
	pc        case_pc        "the installed libxvi.pc names PREFIX=/usr and VERSION; --static --libs lists every dependency"
	headers   case_headers   "each installed header compiles alone with the .pc's cflags"
	version   case_version   "installed xdp-vi --version and -V print the Makefile's VERSION"
	dynamic   case_dynamic   "the README's example builds with pkg-config --cflags --libs, runs on the DESTDIR's libxvi.so: ENODEV and a message"
	static    case_static    "the README's example builds on libxvi.a with pkg-config --static --libs and runs: ENODEV and a message"
	prefix    case_prefix    "installed to a PREFIX of its own (no DESTDIR), the README's example builds from the .pc alone and runs"
	ldconfig  case_ldconfig  "install and uninstall run ldconfig without DESTDIR, not with one"
	uninstall case_uninstall "make uninstall leaves only empty directories in DESTDIR"
)

t_main "$@"
