#!/usr/bin/env bash
# The layering rules (STYLE.md R1), checked on EVERY #include of the library, the
# public headers and launch/:
#   common/ <- topology/ <- collectives/ <- emulator/ <- launch/
# - "tpu/x.h" must be a public header (include/tpu/x.h);
# - any other quoted header must be a file of the including file's own layer
#   (its folder tree), or of common/ (the private helpers every layer shares);
#   never a private header of another layer;
# - <mpi.h> only in emulator/xport/xport_mpi.c, include/tpu/mpi.h and launch/;
#   <yaml.h> only in launch/config/; <hwloc.h> only in launch/placement.c;
# - a public header includes only public headers and the C library.
set -u
root=$1
cd "$root" || exit 2
bad=0
report() {
    echo "layering violation: $*"
    bad=1
}
for layer in common topology collectives emulator launch include; do
    while IFS= read -r f; do
        while IFS= read -r line; do
            hdr=$(printf '%s\n' "$line" | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/')
            case "$line" in
            *'<'*)
                case "$hdr" in
                mpi.h | mpi/*)
                    case "$f" in
                    emulator/xport/xport_mpi.c | include/tpu/mpi.h | launch/*) ;;
                    *) report "$f includes <$hdr> (MPI only in the MPI transport and launch/)" ;;
                    esac
                    ;;
                yaml.h | yaml/*)
                    case "$f" in
                    launch/config/*) ;;
                    *) report "$f includes <$hdr> (YAML only in launch/config/)" ;;
                    esac
                    ;;
                hwloc.h | hwloc/*)
                    case "$f" in
                    launch/placement.c) ;;
                    *) report "$f includes <$hdr> (hwloc only in launch/placement.c)" ;;
                    esac
                    ;;
                esac
                ;;
            *)
                case "$hdr" in
                tpu/*)
                    [ -f "include/$hdr" ] || report "$f includes \"$hdr\", not a public header"
                    ;;
                *)
                    if [ "$layer" = include ]; then
                        report "$f (public) includes private \"$hdr\""
                    elif [ -n "$(find "$layer" -name "$(basename "$hdr")" -print -quit)" ]; then
                        :
                    elif [ -n "$(find common -name "$(basename "$hdr")" -print -quit)" ]; then
                        :
                    else
                        where=$(find common topology collectives emulator launch -name \
                            "$(basename "$hdr")" -print -quit)
                        report "$f includes \"$hdr\"${where:+ (a private header of $where)}"
                    fi
                    ;;
                esac
                ;;
            esac
        done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f")
    done < <(find "$layer" -name '*.[ch]' | sort)
done
if [ "$bad" -ne 0 ]; then
    exit 1
fi
echo "layering ok"
