/*
 * The replay's reading of who compiled the module: the backend (TPU, GPU, CPU
 * or other) from its custom-call targets, backend_config and layouts, what
 * each custom-call is (a sharding marker, a library matmul, a kernel, one that
 * looks like it communicates, unknown), and the warnings for modules whose
 * costs the reader must take with care (compiled for CPU/GPU, unoptimised).
 *
 * Evidence, first match wins: TPU tiled layouts ":T(...)" or a Mosaic
 * tpu_custom_call; AWS Neuron targets (AwsNeuron...); GPU library targets
 * (__cublas$, __cudnn$, __triton, __gpu$) or GPU backend_config keys
 * (operation_queue_id, fusion_backend_config, gemm_backend_config,
 * collective_backend_config); CPU targets (__onednn$, __xla_cpu) or CPU
 * backend_config (outer_dimension_partitions); else unknown.
 */
#include "replay_backend.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int starts(const char *s, const char *prefix)
{
    return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int has(const char *s, const char *part)
{
    return s != NULL && strstr(s, part) != NULL;
}

/* Does the name, lower-cased, hold a word of communication? */
static int sounds_like_comm(const char *name)
{
    static const char *const words[] = {
        "allreduce",      "all_reduce",  "all-reduce", "allgather",  "all_gather",
        "all-gather",     "alltoall",    "all_to_all", "all-to-all", "reducescatter",
        "reduce_scatter", "collective",  "nccl",       "nvshmem",    "mpi",
        "permute",        "sendrecv",    "send",       "recv",       "transfer",
        "ring",           "distributed", "halo",       "exchange",   "psum"};
    char low[128];
    size_t i, k;

    for (i = 0; name[i] != '\0' && i + 1 < sizeof(low); i++) {
        low[i] = (char)tolower((unsigned char)name[i]);
    }
    low[i] = '\0';
    for (k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        if (strstr(low, words[k]) != NULL) {
            return 1;
        }
    }
    return 0;
}

tpu_replay_custom_t tpu__replay_custom_kind(const tpu_hlo_instr_t *in)
{
    const char *t = in->custom_call_target;

    if (t == NULL) {
        return TPU_REPLAY_CUSTOM_OTHER;
    }
    if (strcmp(t, "Sharding") == 0 || strcmp(t, "SPMDFullToShardShape") == 0 ||
        strcmp(t, "SPMDShardToFullShape") == 0) {
        return TPU_REPLAY_CUSTOM_MARKER;
    }
    if (starts(t, "__onednn$matmul") || starts(t, "__cublas$gemm") ||
        starts(t, "__cublas$lt$matmul") || starts(t, "__xla_cpu_runtime_EigenMatMul") ||
        starts(t, "__xla_cpu_runtime_EigenSingleThreadedMatMul")) {
        return TPU_REPLAY_CUSTOM_MATMUL;
    }
    if (sounds_like_comm(t) || sounds_like_comm(in->name)) {
        return TPU_REPLAY_CUSTOM_COMM;
    }
    if (strcmp(t, "tpu_custom_call") == 0 || has(t, "mosaic") || has(t, "triton") ||
        has(t, "pallas")) {
        return TPU_REPLAY_CUSTOM_KERNEL;
    }
    return TPU_REPLAY_CUSTOM_OTHER;
}

tpu_status_t tpu__replay_backend(walker_t *w)
{
    const tpu_hlo_module_t *m = w->mod;
    tpu_replay_report_t *r = w->rep;
    const char *tpu = NULL, *gpu = NULL, *cpu = NULL, *neuron = NULL;
    int c, i, fusions = 0, broadcasts = 0, elemwise = 0;
    tpu_status_t status = TPU_OK;

    for (c = 0; c < m->ncomps; c++) {
        for (i = 0; i < m->comps[c].ninstrs; i++) {
            const tpu_hlo_instr_t *in = &m->comps[c].instrs[i];
            const char *t = in->custom_call_target, *b = in->backend_config;
            tpu_hlo_class_t cls = tpu_hlo_op_class(in->op);

            fusions += in->op == TPU_HLO_OP_FUSION;
            broadcasts += in->op == TPU_HLO_OP_BROADCAST;
            elemwise += cls == TPU_HLO_CLASS_ELEMWISE || cls == TPU_HLO_CLASS_TRANSC;
            if (t != NULL && (strcmp(t, "tpu_custom_call") == 0)) {
                tpu = tpu ? tpu : t;
            } else if (starts(t, "AwsNeuron")) {
                neuron = neuron ? neuron : t;
            } else if (starts(t, "__cublas$") || starts(t, "__cudnn$") || starts(t, "__triton") ||
                       starts(t, "__gpu$")) {
                gpu = gpu ? gpu : t;
            } else if (starts(t, "__onednn$") || starts(t, "__xla_cpu")) {
                cpu = cpu ? cpu : t;
            }
            if (gpu == NULL &&
                (has(b, "operation_queue_id") || has(b, "fusion_backend_config") ||
                 has(b, "gemm_backend_config") || has(b, "collective_backend_config"))) {
                gpu = "backend_config";
            }
            if (cpu == NULL && has(b, "outer_dimension_partitions")) {
                cpu = "backend_config";
            }
        }
    }
    if (m->tiled_layouts > 0 || tpu != NULL) {
        r->backend = "TPU";
        snprintf(r->backend_why, sizeof(r->backend_why), "%s",
                 m->tiled_layouts > 0 ? "tiled layouts :T(...)" : "custom-call tpu_custom_call");
    } else if (neuron != NULL) {
        r->backend = "other";
        snprintf(r->backend_why, sizeof(r->backend_why), "AWS Neuron (custom-call %s)", neuron);
    } else if (gpu != NULL) {
        r->backend = "GPU";
        snprintf(r->backend_why, sizeof(r->backend_why), "%s %s",
                 strcmp(gpu, "backend_config") == 0 ? "GPU keys of" : "custom-call", gpu);
    } else if (cpu != NULL) {
        r->backend = "CPU";
        snprintf(r->backend_why, sizeof(r->backend_why), "%s %s",
                 strcmp(cpu, "backend_config") == 0 ? "CPU keys of" : "custom-call", cpu);
    } else {
        r->backend = "unknown";
        snprintf(r->backend_why, sizeof(r->backend_why),
                 "no backend's custom-calls, "
                 "backend_config or tiled layouts");
    }
    if (strcmp(r->backend, "CPU") == 0 || strcmp(r->backend, "GPU") == 0) {
        status = tpu__replay_warn(w,
                                  "the module was compiled for %s (%s): its fusions and order are "
                                  "not the TPU compiler's; scheduled_step_us estimates the "
                                  "overlap a TPU schedule would give",
                                  r->backend, r->backend_why);
    }
    if (status == TPU_OK && fusions == 0 && broadcasts + elemwise >= 32) {
        status = tpu__replay_warn(w,
                                  "the module looks unoptimised (no fusions, %d broadcasts, %d "
                                  "elementwise ops): each op is costed alone through HBM, where "
                                  "XLA would fuse them; replay the after-optimizations dump",
                                  broadcasts, elemwise);
    }
    return status;
}
