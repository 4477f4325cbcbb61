/*
 * Every collective over the real MPI transport: each dtype and reduction, every
 * axis subset of the topology given on the command line, data checked against
 * the reference, and the modeled time checked bit for bit against the sim path
 * and the loopback transport.  Each rank checks its own results; the outcomes are
 * OR-reduced and every rank exits non-zero on failure.
 *
 * usage: mpirun -n N test_coll_mpi CHIP SHAPE WRAP SLICES [host-plans]
 *
 * host-plans: psum only, over all axes, for every dtype and reduction at the
 * edge sizes of the executor's host plans (one element, sizes the chip count
 * does not divide, just below, at and just above the one-round limit of 16 KiB,
 * and larger, two-round ones).
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mpi.h"
#include "tpu/topo.h"

#include "loopback_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loopback: every chip in this process; returns the modeled time, checks data. */
static int loopback_time(const tpu_topo_t *topo, tpu_coll_plan_t *plan, double *us_p)
{
    tpu_err_t err = {0};
    void *dtype = (void *)&tpu_coll_plan_desc(plan)->dtype;
    void **out = NULL;
    uint64_t inb, outb;
    int c, bad = tpu_test_loopback_run(topo, plan, tpu_coll_fill_exact, dtype, &out, us_p);

    tpu_coll_plan_sizes(plan, &inb, &outb);
    for (c = 0; c < topo->nchips && !bad; c++) {
        void *ref = calloc(1, outb);

        tpu_coll_reference(plan, c, tpu_coll_fill_exact, dtype, ref, &err);
        if (memcmp(ref, out[c], outb) != 0) {
            fprintf(stderr, "loopback: chip %d result differs\n", c);
            bad = 1;
        }
        free(ref);
    }
    tpu_test_loopback_free(out, topo->nchips);
    return bad;
}

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_xport_t *x = NULL;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], naxes, is_auto, rank, size, failed = 0, cases = 0;
    unsigned mask, all;
    int k, dt, op, opz, host = argc > 5 && strcmp(argv[5], "host-plans") == 0;
    /* host-plans: elements per chip (bf16 at twice the count from 4095 up). */
    static const uint64_t host_elems[] = {1, 17, 4095, 4096, 4097, 16 * 1024 + 3, 40000};
    int nsz = host ? (int)(sizeof(host_elems) / sizeof(host_elems[0])) : 1;
    uint64_t call = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 5 || tpu_chip_preset(argv[1], &chip, &err) != TPU_OK ||
        tpu_topo_parse_shape(argv[2], dims, &naxes, &err) != TPU_OK ||
        tpu_topo_parse_wrap(argv[3], naxes, wrap, &is_auto, &err) != TPU_OK ||
        tpu_topo_init(&topo, naxes, dims, wrap, atoi(argv[4]), &err) != TPU_OK ||
        topo.nchips != size || tpu_xport_mpi_create(MPI_COMM_WORLD, &x, &err) != TPU_OK) {
        if (rank == 0) {
            fprintf(stderr, "usage: test_coll_mpi CHIP SHAPE WRAP SLICES (%s)\n", err.msg);
        }
        MPI_Finalize();
        return 1;
    }
    tpu_chip_link_model(&chip, &link);
    all = (1u << naxes) - 1;
    if (topo.slices > 1) {
        all |= TPU_AXIS_MASK_DCN;
    }
    for (mask = 1; mask <= all; mask++) {
        if ((mask & all) != mask || tpu_topo_group_size(&topo, mask) < 2) {
            continue;
        }
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            if (host && (k != TPU_COLL_PSUM || mask != all)) {
                continue;
            }
            /* The types the collectives take (plan.c refuses i8, a chip type). */
            for (dt = 0; dt <= TPU_DTYPE_I32; dt++) {
                for (opz = 0; opz < TPU_REDOP_COUNT * nsz; opz++) {
                    tpu_coll_desc_t d;
                    tpu_coll_plan_t *plan = NULL;
                    tpu_coll_result_t res;
                    uint64_t inb, outb;
                    void *in, *out, *ref;
                    double us = 0, lb_us = 0, max_us;
                    int bad = 0, g = tpu_topo_group_size(&topo, mask), a, naxes_sel = 0;
                    int sz = opz / TPU_REDOP_COUNT;

                    op = opz % TPU_REDOP_COUNT;

                    for (a = 0; a <= TPU_AXIS_DCN; a++) {
                        naxes_sel += (mask >> a) & 1;
                    }
                    if ((k != TPU_COLL_PSUM && k != TPU_COLL_REDUCE_SCATTER && op > 0) ||
                        (k == TPU_COLL_PPERMUTE && naxes_sel != 1) ||
                        (k == TPU_COLL_P2P && mask != 1)) {
                        continue;
                    }
                    tpu_coll_desc_init(&d);
                    d.kind = (tpu_coll_kind_t)k;
                    d.axes = mask;
                    d.dtype = (tpu_dtype_t)dt;
                    d.op = (tpu_redop_t)op;
                    d.shift = g > 2 ? -1 : 1;
                    /* Uneven for psum (a padded last block), whole blocks otherwise. */
                    d.bytes = (uint64_t)g * 24 * (uint64_t)tpu_dtype_size(d.dtype);
                    if (k == TPU_COLL_PSUM) {
                        d.bytes = (uint64_t)(g * 24 + 5) * (uint64_t)tpu_dtype_size(d.dtype);
                    }
                    if (host) {
                        uint64_t esz = (uint64_t)tpu_dtype_size(d.dtype);

                        d.bytes =
                            host_elems[sz] * (esz == 2 && host_elems[sz] >= 4095 ? 2 : 1) * esz;
                    }
                    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
                        fprintf(stderr, "rank %d: plan: %s\n", rank, err.msg);
                        failed = 1;
                        continue;
                    }
                    tpu_coll_plan_sizes(plan, &inb, &outb);
                    in = malloc(inb);
                    out = calloc(1, outb);
                    ref = calloc(1, outb);
                    tpu_coll_fill_exact(rank, in, inb, &d.dtype);
                    {
                        tpu_coll_run_opts_t o = {call++, 30, 1, 0, NULL, NULL, NULL};
                        void *ins[1] = {in}, *outs[1] = {out};

                        tpu_coll_exec_t *exec = NULL;

                        if (tpu_coll_exec_create(plan, x, &exec, &err) != TPU_OK ||
                            tpu_coll_exec_run(exec, &o, ins, outs, &us, &err) != TPU_OK) {
                            fprintf(stderr, "rank %d: run: %s\n", rank, err.msg);
                            bad = 1;
                        }
                        tpu_coll_exec_destroy(exec);
                    }
                    tpu_coll_reference(plan, rank, tpu_coll_fill_exact, &d.dtype, ref, &err);
                    if (!bad && memcmp(ref, out, outb) != 0 &&
                        (k != TPU_COLL_P2P || rank == tpu_coll_plan_desc(plan)->dst)) {
                        fprintf(stderr, "rank %d: %s mask %u %s %s %llu bytes: wrong data\n", rank,
                                tpu_coll_name(d.kind), mask, tpu_dtype_name(d.dtype),
                                tpu_redop_name(d.op), (unsigned long long)d.bytes);
                        bad = 1;
                    }
                    MPI_Allreduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                    tpu_coll_plan_model(plan, &res, &err);
                    if (max_us != res.modeled_us || us != res.modeled_us) {
                        fprintf(stderr, "rank %d: %s mask %u: mpi %.17g sim %.17g\n", rank,
                                tpu_coll_name(d.kind), mask, us, res.modeled_us);
                        bad = 1;
                    }
                    if (rank == 0 && dt == 0 && op == 0) {
                        bad |= loopback_time(&topo, plan, &lb_us);
                        if (lb_us != res.modeled_us) {
                            fprintf(stderr, "%s mask %u: loopback %.17g sim %.17g\n",
                                    tpu_coll_name(d.kind), mask, lb_us, res.modeled_us);
                            bad = 1;
                        }
                    }
                    failed |= bad;
                    cases++;
                    free(in);
                    free(out);
                    free(ref);
                    tpu_coll_plan_destroy(plan);
                }
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %s wrap %s slices %s: %d cases on %d ranks: %s\n", argv[1], argv[2], argv[3],
               argv[4], cases, size, failed ? "FAILED" : "all passed");
    }
    tpu_xport_destroy(x);
    MPI_Finalize();
    return failed;
}
