#!/usr/bin/env bash
# cmake --install into a scratch prefix, then build and run a program against it
# with pkg-config: the installed library, headers and tpuemu.pc work.
set -eu
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
cc "$src" $(pkg-config --cflags --libs tpuemu) -o "$prefix/use"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/use"
