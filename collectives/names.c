/*
 * Names: the collectives' names and their parser, and the defaults of a request.
 */
#include "tpu/coll.h"

#include <string.h>

static const char *const coll_names[] = {
#define X(name, str, mpi) str,
    TPU_COLL_MAP(X)
#undef X
};
static const char *const coll_mpi_names[] = {
#define X(name, str, mpi) mpi,
    TPU_COLL_MAP(X)
#undef X
};
_Static_assert(sizeof(coll_names) / sizeof(coll_names[0]) == TPU_COLL_COUNT &&
                   sizeof(coll_mpi_names) / sizeof(coll_mpi_names[0]) == TPU_COLL_COUNT,
               "the name tables list every collective");

void tpu_coll_desc_init(tpu_coll_desc_t *desc)
{
    memset(desc, 0, sizeof(*desc));
    desc->kind = TPU_COLL_PSUM;
    desc->dtype = TPU_DTYPE_F32;
    desc->op = TPU_REDOP_SUM;
    desc->shift = 1;
    desc->src = -1;
    desc->dst = -1;
}

const char *tpu_coll_name(tpu_coll_kind_t kind)
{
    return kind < TPU_COLL_COUNT ? coll_names[kind] : "?";
}

const char *tpu_coll_mpi_name(tpu_coll_kind_t kind)
{
    return kind < TPU_COLL_COUNT ? coll_mpi_names[kind] : "?";
}

tpu_status_t tpu_coll_parse(const char *text, tpu_coll_kind_t *kind_p, tpu_err_t *err)
{
    int i;

    for (i = 0; i < TPU_COLL_COUNT; i++) {
        if (strcmp(text, coll_names[i]) == 0) {
            *kind_p = (tpu_coll_kind_t)i;
            return TPU_OK;
        }
    }
    /* JAX's names and common spellings. */
    if (strcmp(text, "all-reduce") == 0 || strcmp(text, "allreduce") == 0) {
        *kind_p = TPU_COLL_PSUM;
    } else if (strcmp(text, "allgather") == 0 || strcmp(text, "all_gather") == 0) {
        *kind_p = TPU_COLL_ALL_GATHER;
    } else if (strcmp(text, "reducescatter") == 0 || strcmp(text, "psum_scatter") == 0 ||
               strcmp(text, "psum-scatter") == 0) {
        *kind_p = TPU_COLL_REDUCE_SCATTER;
    } else if (strcmp(text, "alltoall") == 0 || strcmp(text, "all_to_all") == 0) {
        *kind_p = TPU_COLL_ALL_TO_ALL;
    } else {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown collective '%s' (known: psum, all-gather, reduce-scatter, "
                           "all-to-all, ppermute, p2p)",
                           text);
    }
    return TPU_OK;
}
