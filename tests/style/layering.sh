#!/usr/bin/env bash
# topology/ and collectives/ must not include MPI, hwloc or YAML headers (STYLE.md R1).
# (mpi.h is not on their include path, so the build already refuses it; hwloc.h and
# yaml.h are on the default path, hence this check.)
set -u
root=$1
bad=$(grep -rnE '#[[:space:]]*include[[:space:]]*[<"](mpi|hwloc|yaml)(/[^>"]*)?\.h[>"]' \
    "$root/topology" "$root/collectives" "$root/common" || true)
if [ -n "$bad" ]; then
    echo "layering violation:"
    echo "$bad"
    exit 1
fi
# MPI only in the MPI transport, launch/ and tests; YAML and hwloc only in launch/.
bad=$(grep -rlE '#[[:space:]]*include[[:space:]]*<mpi\.h>' "$root/emulator" "$root/include" |
    grep -vE 'emulator/xport/xport_mpi\.c|include/tpu/mpi\.h' || true)
bad2=$(grep -rlE '#[[:space:]]*include[[:space:]]*<(yaml|hwloc)\.h>' "$root/emulator" \
    "$root/include" || true)
if [ -n "$bad$bad2" ]; then
    echo "layering violation: $bad $bad2"
    exit 1
fi
echo "layering ok"
