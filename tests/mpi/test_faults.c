/*
 * Faults over real MPI, each ending in an error on every rank, never a hang, and
 * the transport usable again afterwards:
 *   mismatch  - chip 1 enters an all-gather while the others enter a psum: every
 *               rank gets TPU_ERR_MISMATCH naming both calls (compared before any
 *               byte moves);
 *   watchdog  - chip 1 never enters the psum: the others get TPU_ERR_TIMEOUT
 *               naming chip 1 by its coordinates, within the timeout;
 *   chunks    - chips 2 and 3 plan a 1 MiB rs_ag psum with 4 chunks, chips 0 and 1 with
 *               2, and nobody compares calls first: the message headers catch it,
 *               naming the field;
 *   bytes     - chip 1 enters a psum twice as large (payloads larger than the
 *               receives), headers only: a mismatch naming the bytes, nothing
 *               written past a buffer (run under ASan to see it).
 * After the fault every rank runs a correct psum twice on the same transport, once
 * with the run object of the failed call: both must succeed with exact data, so a
 * failed call leaves nothing behind that a later one would match.
 * usage: mpirun -n 4 test_faults mismatch|watchdog|chunks|bytes
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct env {
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_xport_t *x;
    int rank;
} env_t;

/* Plan 'd' and run it once; '*exec_p' keeps the run object when not NULL. */
static tpu_status_t run(const env_t *env, const tpu_coll_desc_t *d, const tpu_coll_run_opts_t *o,
                        tpu_coll_exec_t **exec_p, tpu_coll_plan_t **plan_p, int *wrong_p,
                        tpu_err_t *err)
{
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = exec_p != NULL ? *exec_p : NULL;
    uint64_t inb, outb;
    void *in = NULL, *out = NULL, *ref = NULL;
    double us;
    tpu_status_t status;

    *wrong_p = 0;
    if (plan_p != NULL && *plan_p != NULL) {
        plan = *plan_p;
    } else if ((status = tpu_coll_plan_create(&env->topo, &env->link, d, &plan, err)) != TPU_OK) {
        return status;
    }
    tpu_coll_plan_sizes(plan, &inb, &outb);
    in = calloc(1, inb);
    out = calloc(1, outb);
    ref = calloc(1, outb);
    tpu_coll_fill_exact(env->rank, in, inb, (void *)&d->dtype);
    status = exec != NULL ? TPU_OK : tpu_coll_exec_create(plan, env->x, &exec, err);
    if (status == TPU_OK) {
        void *ins[1] = {in}, *outs[1] = {out};

        status = tpu_coll_exec_run(exec, o, ins, outs, &us, err);
    }
    if (status == TPU_OK) {
        tpu_coll_reference(plan, env->rank, tpu_coll_fill_exact, (void *)&d->dtype, ref, err);
        *wrong_p = memcmp(ref, out, outb) != 0;
    }
    if (exec_p != NULL) {
        *exec_p = exec;
    } else {
        tpu_coll_exec_destroy(exec);
    }
    if (plan_p != NULL) {
        *plan_p = plan;
    } else {
        tpu_coll_plan_destroy(plan);
    }
    free(in);
    free(out);
    free(ref);
    return status;
}

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    env_t env;
    tpu_coll_desc_t d;
    tpu_coll_exec_t *exec = NULL;
    tpu_coll_plan_t *plan = NULL;
    int dims[3] = {2, 2, 1}, wrap[3] = {0, 0, 0}, ok = 1, all_ok, names1 = 0, any1, wrong, i;
    tpu_status_t status = TPU_OK;
    const char *mode = argc > 1 ? argv[1] : "mismatch";
    int watchdog = strcmp(mode, "watchdog") == 0, chunks = strcmp(mode, "chunks") == 0;
    int bytes = strcmp(mode, "bytes") == 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &env.rank);
    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &env.link);
    tpu_topo_init(&env.topo, 2, dims, wrap, 1, &err);
    tpu_xport_mpi_create(MPI_COMM_WORLD, &env.x, &err);
    tpu_coll_desc_init(&d);
    d.axes = 3;
    d.bytes = chunks || bytes ? 1u << 20 : 4096;
    if (strcmp(mode, "mismatch") == 0 && env.rank == 1) {
        d.kind = TPU_COLL_ALL_GATHER;
    }
    if (chunks) {
        /* The pipelined psum by name: on the open 2x2 the selector's choice is the
         * snake ring, which has no depth to differ in. */
        snprintf(d.algo, sizeof(d.algo), "rs_ag");
        d.chunks = env.rank >= 2 ? 4 : 2;
    }
    if (bytes && env.rank == 1) {
        d.bytes *= 2;
    }
    if (!(watchdog && env.rank == 1)) {
        tpu_coll_run_opts_t o = {
            7, watchdog ? 1.0 : 10.0, !watchdog && !chunks && !bytes, 0, NULL, NULL, NULL};

        status = run(&env, &d, &o, &exec, &plan, &wrong, &err);
        printf("rank %d: %s\n", env.rank, err.msg);
        if (watchdog) {
            /* Each chip names what it still waits for; the neighbours of chip 1 name it. */
            ok = status == TPU_ERR_TIMEOUT && strstr(err.msg, "watchdog") != NULL;
            names1 = strstr(err.msg, "chip 1 (0,1)") != NULL;
        } else if (chunks || bytes) {
            /* A chip the others' messages reach names the field; one that only waits
             * for a failed peer times out. */
            ok = (status == TPU_ERR_MISMATCH &&
                  strstr(err.msg, chunks ? "differ in chunks (" : "differ in bytes (") != NULL) ||
                 status == TPU_ERR_TIMEOUT;
            names1 = status == TPU_ERR_MISMATCH;
        } else {
            ok = status == TPU_ERR_MISMATCH && strstr(err.msg, "psum") != NULL &&
                 strstr(err.msg, "all-gather") != NULL && strstr(err.msg, "call 7") != NULL &&
                 strstr(err.msg, "differ in collective (") != NULL;
        }
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&names1, &any1, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (watchdog || chunks || bytes) {
        all_ok = all_ok && any1;
    }
    /* The same transport again: the failed run object (when it is the same call
     * on every chip), then a fresh one; no barrier first, so a late chip's
     * leftovers meet the next call. */
    tpu_coll_desc_init(&d);
    d.axes = 3;
    d.bytes = 1u << 20;
    for (i = 0; i < 2; i++) {
        tpu_coll_run_opts_t o = {8 + (uint64_t)i, 10.0, 0, 0, NULL, NULL, NULL};
        int reuse = i == 0 && plan != NULL && !chunks && !bytes &&
                    tpu_coll_plan_desc(plan)->kind == TPU_COLL_PSUM &&
                    tpu_coll_plan_desc(plan)->bytes == d.bytes;

        err.msg[0] = '\0';
        status = run(&env, &d, &o, reuse ? &exec : NULL, reuse ? &plan : NULL, &wrong, &err);
        if (status != TPU_OK || wrong) {
            printf("rank %d: rerun %d after %s: %s%s\n", env.rank, i, mode, err.msg,
                   wrong ? " (wrong data)" : "");
            ok = 0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all_ok = all_ok && ok;
    if (env.rank == 0) {
        printf("%s: %s\n", mode, all_ok ? "passed" : "FAILED");
    }
    tpu_coll_exec_destroy(exec);
    tpu_coll_plan_destroy(plan);
    tpu_xport_destroy(env.x);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
