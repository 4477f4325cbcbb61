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
# The headers of each layer's folder tree, by name: " a.h b.h ".
declare -A headers
for layer in common topology collectives emulator launch; do
    headers[$layer]=" $(find "$layer" \( -name '*.h' -o -name '*.def' \) -printf '%f ' | sort) "
done
while IFS= read -r hit; do
    f=${hit%%:*}
    line=${hit#*:}
    layer=${f%%/*}
    # Bash's own regex: no process per include (a sed each made this slow on a loaded machine).
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]([^\>\"]+)[\>\"] ]] || continue
    hdr=${BASH_REMATCH[1]}
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
        base=${hdr##*/}
        case "$hdr" in
        tpu/*)
            [ -f "include/$hdr" ] || report "$f includes \"$hdr\", not a public header"
            ;;
        *)
            if [ "$layer" = include ]; then
                report "$f (public) includes private \"$hdr\""
            elif [[ ${headers[$layer]} == *" $base "* || ${headers[common]} == *" $base "* ]]; then
                :
            else
                where=""
                for l in common topology collectives emulator launch; do
                    [[ ${headers[$l]} == *" $base "* ]] && where="$where $l/"
                done
                report "$f includes \"$hdr\"${where:+ (a private header of$where)}"
            fi
            ;;
        esac
        ;;
    esac
done < <(find common topology collectives emulator launch include -name '*.[ch]' -print0 |
    sort -z | xargs -0 grep -HE '^[[:space:]]*#[[:space:]]*include')
if [ "$bad" -ne 0 ]; then
    exit 1
fi
echo "layering ok"
