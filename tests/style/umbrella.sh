#!/usr/bin/env bash
# include/tpu.h includes every public header but tpu/mpi.h (opt-in: it includes <mpi.h>).
set -u
root=$1
missing=0
for h in "$root"/include/tpu/*.h; do
    name=tpu/$(basename "$h")
    [ "$name" = tpu/mpi.h ] && continue
    if ! grep -q "^#include \"$name\"" "$root/include/tpu.h"; then
        echo "include/tpu.h does not include $name"
        missing=1
    fi
done
if grep -q '^#include "tpu/mpi.h"' "$root/include/tpu.h"; then
    echo "include/tpu.h includes tpu/mpi.h, which is opt-in"
    missing=1
fi
[ $missing = 0 ] && echo "umbrella ok"
exit $missing
