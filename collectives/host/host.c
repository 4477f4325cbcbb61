/*
 * The registry of host plans: the table of host_algorithms.def.
 */
#include "host/host.h"

const tpu_host_algo_t tpu__host_algos[] = {
#define TPU_HOST_ALGO(kind, name, from_member0, summary) \
    {TPU_COLL_##kind, #name, tpu__host_##kind##_##name, from_member0, summary},
#include "host_algorithms.def"
#undef TPU_HOST_ALGO
};
const int tpu__nhost_algos = (int)(sizeof(tpu__host_algos) / sizeof(tpu__host_algos[0]));
