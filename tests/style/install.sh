#!/usr/bin/env bash
# cmake --install into a scratch prefix, then build and run a program against it
# with pkg-config, compiled as C and as C++: the installed library, headers and
# tpuemu.pc work, and the headers are usable from C++.  Then the tpuemu.pc that a
# configure with a multiarch libdir (lib/x86_64-linux-gnu) writes, with the same
# library and headers laid out that way: its -I and -L point into the prefix.
set -eu
build=$1 src=$2
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libtpuemu.so*' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src" $(pkg-config --cflags --libs tpuemu) -o "$prefix/use"
LD_LIBRARY_PATH="$libdir" "$prefix/use"
c++ -x c++ -Wall -Werror "$src" $(pkg-config --cflags --libs tpuemu) -o "$prefix/use_cxx"
LD_LIBRARY_PATH="$libdir" "$prefix/use_cxx"
# The multiarch layout under a second prefix.
multi=$prefix/multi
cmake -S "$srcdir" -B "$prefix/conf" -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$multi" \
    -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu >/dev/null
mkdir -p "$multi/lib/x86_64-linux-gnu/pkgconfig"
cp -a "$prefix/include" "$multi/include"
cp -a "$libdir"/libtpuemu.so* "$multi/lib/x86_64-linux-gnu/"
cp "$prefix/conf/tpuemu.pc" "$multi/lib/x86_64-linux-gnu/pkgconfig/"
flags=$(PKG_CONFIG_PATH="$multi/lib/x86_64-linux-gnu/pkgconfig" pkg-config --cflags --libs tpuemu)
inc=$(printf '%s\n' $flags | sed -n 's/^-I//p') lib=$(printf '%s\n' $flags | sed -n 's/^-L//p')
if [ "$(realpath "$inc")" != "$(realpath "$multi/include")" ] ||
    [ "$(realpath "$lib")" != "$(realpath "$multi/lib/x86_64-linux-gnu")" ]; then
    echo "FAIL: multiarch tpuemu.pc gives '$flags'"
    exit 1
fi
cc "$src" $flags -o "$prefix/use_multi"
LD_LIBRARY_PATH="$multi/lib/x86_64-linux-gnu" "$prefix/use_multi"
echo "ok: C, C++ and a multiarch libdir"
