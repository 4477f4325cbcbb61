/*
 * The MLP's state, shared by mlp.c (the model and its weights), mlp_cost.c (the
 * costs of one chip) and mlp_step.c (the training step); and mlp.c's random numbers.
 * Private to emulator/workloads.
 */
#ifndef TPU_MLP_INTERNAL_H
#define TPU_MLP_INTERNAL_H

#include "tpu/chip.h"
#include "tpu/hbm.h"
#include "tpu/mlp.h"
#include "tpu/topo.h"
#include "tpu/vmem.h"

#include "mlp_comm.h"

#include <stdint.h>

#define NIN  TPU_MLP_IN
#define NOUT TPU_MLP_OUT

/* Random streams. */
#define S_W1      1
#define S_W2      2
#define S_W3      3
#define S_TEACHER 100
#define S_X       200

typedef struct chip_st {
    int chip, d, m;
    tpu_hbm_t *hbm;
    float *unit[3];  /* the chip's parameters (fsdp: only while gathered) */
    float *shard[3]; /* fsdp: the chip's piece of each unit */
} chip_st_t;

/* The arrays of one step on one chip. */
typedef struct act {
    float *x;
    int32_t *y;
    float *z1, *h1, *z2p, *z2, *h2, *lg, *dh2, *dh1;
    float *grad[3], *gsum[3];
    float *loss_in, *loss_out;
} act_t;

struct tpu_mlp {
    tpu_mlp_spec_t spec;
    tpu_chip_spec_t chip;
    double pace; /* the slowest chip's speed (tpu/fault.h): it paces every step's compute */
    const tpu_topo_t *topo;
    mlp_comm_t comm;
    tpu_vmem_t *vmem; /* one executor serves every local chip (one thread) */
    tpu_mlp_strategy_t strat;
    int fsdp;
    int D, M;
    int64_t H, Hm, b;
    int64_t ucount[3], ulen[3];
    int nlocal;
    chip_st_t *chips;
    act_t *act;
    float *teacher;
    /* The step's timeline (local chip 0). */
    double t_compute, t_comm, done[6]; /* async collectives: grads 0-2, gathers 3-5 */
    const char *section;               /* the part of the step that runs, for its ops */
    tpu_mlp_report_t *rep;
};


#endif
