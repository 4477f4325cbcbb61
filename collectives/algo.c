/*
 * The algorithm registry: the table of algorithms.def, and its public view
 * (tpu_coll_algo_count(), tpu_coll_algo_at()).
 */
#include "algo.h"

#include <string.h>

const tpu_algo_t tpu__algos[] = {
#define TPU_ALGO(kind, name, pipelined, groups, summary) \
    {TPU_COLL_##kind, #name, tpu__algo_##kind##_##name, pipelined, groups, summary},
#include "algorithms.def"
#undef TPU_ALGO
};
const int tpu__nalgos = (int)(sizeof(tpu__algos) / sizeof(tpu__algos[0]));

const tpu_algo_t *tpu__algo_named(const tpu_coll_desc_t *d)
{
    int i;

    for (i = 0; i < tpu__nalgos && d->algo[0] != '\0'; i++) {
        if (tpu__algos[i].kind == d->kind && strcmp(tpu__algos[i].name, d->algo) == 0) {
            return &tpu__algos[i];
        }
    }
    return NULL;
}

int tpu_coll_algo_count(void)
{
    return tpu__nalgos;
}

void tpu_coll_algo_at(int i, tpu_coll_kind_t *kind_p, const char **name_p, const char **summary_p)
{
    *kind_p = tpu__algos[i].kind;
    *name_p = tpu__algos[i].name;
    *summary_p = tpu__algos[i].summary;
}
