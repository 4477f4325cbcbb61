/*
 * The algorithm registry: the table of algorithms.def, and its public view
 * (tpu_coll_algo_count(), tpu_coll_algo_at()).
 */
#include "algo.h"

const tpu_algo_t tpu__algos[] = {
#define TPU_ALGO(kind, name, pipelined, groups, summary) \
    {TPU_COLL_##kind, #name, tpu__algo_##kind##_##name, pipelined, groups, summary},
#include "algorithms.def"
#undef TPU_ALGO
};
const int tpu__nalgos = (int)(sizeof(tpu__algos) / sizeof(tpu__algos[0]));

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
