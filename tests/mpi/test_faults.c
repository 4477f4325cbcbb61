/*
 * Faults over real MPI, each ending in an error on every rank, never a hang:
 *   mismatch  - chip 1 enters an all-gather while the others enter a psum:
 *               every rank gets TPU_ERR_MISMATCH naming both calls;
 *   watchdog  - chip 1 never enters the psum: the others get TPU_ERR_TIMEOUT
 *               naming chip 1 by its coordinates, within the timeout.
 * usage: mpirun -n 4 test_faults mismatch|watchdog
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_xport_t *x = NULL;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    int dims[3] = {2, 2, 1}, wrap[3] = {0, 0, 0}, rank, ok = 1, all_ok, names1 = 0, any1;
    tpu_status_t status = TPU_OK;
    uint64_t inb, outb;
    void *in, *out;
    double us;
    int watchdog = argc > 1 && strcmp(argv[1], "watchdog") == 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    tpu_topo_init(&topo, 2, dims, wrap, 1, &err);
    tpu_xport_mpi_create(MPI_COMM_WORLD, &x, &err);
    tpu_coll_desc_init(&d);
    d.axes = 3;
    d.bytes = 4096;
    if (!watchdog && rank == 1) {
        d.kind = TPU_COLL_ALL_GATHER;
    }
    tpu_coll_plan_create(&topo, &link, &d, &plan, &err);
    tpu_coll_plan_sizes(plan, &inb, &outb);
    in = calloc(1, inb);
    out = calloc(1, outb);
    if (!(watchdog && rank == 1)) {
        tpu_coll_run_opts_t o = {7, watchdog ? 1.0 : 10.0, !watchdog, 0};
        void *ins[1] = {in}, *outs[1] = {out};

        tpu_coll_exec_t *exec = NULL;

        status = tpu_coll_exec_create(plan, x, &exec, &err);
        if (status == TPU_OK) {
            status = tpu_coll_exec_run(exec, &o, ins, outs, &us, &err);
        }
        tpu_coll_exec_destroy(exec);
        printf("rank %d: %s\n", rank, err.msg);
        if (watchdog) {
            /* Each chip names what it still waits for; the neighbours of chip 1 name it. */
            ok = status == TPU_ERR_TIMEOUT && strstr(err.msg, "watchdog") != NULL;
            names1 = strstr(err.msg, "chip 1 (0,1)") != NULL;
        } else {
            ok = status == TPU_ERR_MISMATCH && strstr(err.msg, "psum") != NULL &&
                 strstr(err.msg, "all-gather") != NULL && strstr(err.msg, "call 7") != NULL;
        }
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&names1, &any1, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (watchdog) {
        all_ok = all_ok && any1;
    }
    if (rank == 0) {
        printf("%s: %s\n", watchdog ? "watchdog" : "mismatch", all_ok ? "passed" : "FAILED");
    }
    free(in);
    free(out);
    tpu_coll_plan_destroy(plan);
    tpu_xport_destroy(x);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
