/*
 * The collectives through the node's shared memory (collectives/shm.c: psum,
 * all-gather, reduce-scatter) against the message path, bit for bit: two mpi
 * transports, one made with TPUEMU_HOST_SHM=0 (messages) and one with shared
 * regions of 64 KiB (so that larger sizes go through several pieces), the same
 * collective on both, over every axis subset of SHAPE (groups of every size the
 * shape gives), f32, bf16 and i32 (sum) and f32 max, at sizes of one element
 * (a block of one element: all-gather, reduce-scatter), not divisible by the
 * group, around the one-round limit (16 KiB) and over several pieces.  Each run
 * must say it took the path it was meant to (tpu_coll_exec_host_path).  Last, a
 * mismatch (half the ranks with another ICI bandwidth) through shared memory.  The data are not
 * exact (f32 values of many magnitudes), so any change in the order of additions shows. Rank 0 also
 * compares its f32 sums with the loopback transport's chip 0. Each rank checks its own results; the
 * outcomes are OR-reduced.
 *
 * usage: mpirun -n N test_shm_psum CHIP SHAPE WRAP [psum|all-gather|reduce-scatter]
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/dtype.h"
#include "tpu/mpi.h"
#include "tpu/topo.h"

#include "loopback_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values of many magnitudes and signs (sums depend on their order). */
static void fill_rough(int chip, void *buf, uint64_t bytes, void *dtype_arg)
{
    tpu_dtype_t dt = *(const tpu_dtype_t *)dtype_arg;
    uint64_t i, n = bytes / (uint64_t)tpu_dtype_size(dt);

    for (i = 0; i < n; i++) {
        uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(chip * 40503u + 17u);
        float v;

        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        v = (float)((int32_t)(h % 200001u) - 100000) / (float)(1u << (h % 23u));
        if (dt == TPU_DTYPE_F32) {
            ((float *)buf)[i] = v;
        } else if (dt == TPU_DTYPE_BF16) {
            tpu_dtype_bf16_narrow(&v, (uint16_t *)buf + i, 1);
        } else {
            ((int32_t *)buf)[i] = (int32_t)h;
        }
    }
}

static int run(tpu_xport_t *x, tpu_coll_plan_t *plan, uint64_t call, void *in, void *out,
               const char *path)
{
    tpu_err_t err = {0};
    tpu_coll_exec_t *exec = NULL;
    tpu_coll_run_opts_t o = {call, 30, 1, 0, NULL, NULL, NULL};
    void *ins[1] = {in}, *outs[1] = {out};
    double us;
    int bad = 0;

    if (tpu_coll_exec_create(plan, x, &exec, &err) != TPU_OK ||
        tpu_coll_exec_run(exec, &o, ins, outs, &us, &err) != TPU_OK) {
        fprintf(stderr, "run: %s\n", err.msg);
        bad = 1;
    } else if (strcmp(tpu_coll_exec_host_path(exec), path) != 0) {
        fprintf(stderr, "run: the host path is %s, not %s\n", tpu_coll_exec_host_path(exec), path);
        bad = 1;
    }
    tpu_coll_exec_destroy(exec);
    return bad;
}

/*
 * A mismatch through shared memory: the upper half of the ranks plans with twice
 * the ICI bandwidth and nobody compares calls first (check_peers 0), so the
 * shared-memory path's own check of the signatures in the regions must fail
 * every rank with a mismatch naming both chips and the field.
 */
static int mismatch(tpu_xport_t *xs, const tpu_topo_t *topo, tpu_link_model_t link,
                    tpu_coll_kind_t kind, int rank, int size, uint64_t call)
{
    tpu_err_t err = {0};
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_coll_run_opts_t o = {call, 30, 0, 0, NULL, NULL, NULL};
    uint64_t inb, outb;
    void *in = NULL, *out = NULL, *ins[1], *outs[1];
    double us;
    int bad = 0;
    tpu_status_t status;

    if (rank >= size / 2) {
        link.ici_bw *= 2;
    }
    tpu_coll_desc_init(&desc);
    desc.kind = kind;
    desc.axes = (1u << topo->naxes) - 1;
    desc.dtype = TPU_DTYPE_F32;
    desc.bytes = 64 * 4 * (uint64_t)size;
    if (tpu_coll_plan_create(topo, &link, &desc, &plan, &err) != TPU_OK ||
        tpu_coll_exec_create(plan, xs, &exec, &err) != TPU_OK) {
        fprintf(stderr, "rank %d: mismatch: %s\n", rank, err.msg);
        tpu_coll_plan_destroy(plan);
        return 1;
    }
    tpu_coll_plan_sizes(plan, &inb, &outb);
    in = calloc(1, inb);
    out = calloc(1, outb);
    ins[0] = in;
    outs[0] = out;
    status = tpu_coll_exec_run(exec, &o, ins, outs, &us, &err);
    if (status != TPU_ERR_MISMATCH || strcmp(tpu_coll_exec_host_path(exec), "shm") != 0 ||
        strstr(err.msg, "collective mismatch: chip ") == NULL ||
        strstr(err.msg, ", but chip ") == NULL || strstr(err.msg, "differ in ici_bw") == NULL) {
        fprintf(stderr, "rank %d: %s mismatch: status %d, path %s, message '%s'\n", rank,
                tpu_coll_name(kind), (int)status, tpu_coll_exec_host_path(exec), err.msg);
        bad = 1;
    }
    free(in);
    free(out);
    tpu_coll_exec_destroy(exec);
    tpu_coll_plan_destroy(plan);
    return bad;
}

/* Chip 0's psum on the loopback transport, into 'out0'. */
static int loopback0(const tpu_topo_t *topo, tpu_coll_plan_t *plan, void *out0, uint64_t outb)
{
    tpu_dtype_t dt = tpu_coll_plan_desc(plan)->dtype;
    void **out = NULL;
    double us;
    int bad = tpu_test_loopback_run(topo, plan, fill_rough, &dt, &out, &us);

    if (!bad) {
        memcpy(out0, out[0], (size_t)outb);
    }
    tpu_test_loopback_free(out, topo->nchips);
    return bad;
}

int main(int argc, char **argv)
{
    static const uint64_t elems[] = {1, 5, 4095, 4096, 4097, 8191, 8193, 12289, 40001};
    /* all-gather and reduce-scatter: elements per block. */
    static const uint64_t blocks[] = {1, 5, 1023, 4097, 20011};
    static const tpu_dtype_t dtypes[] = {TPU_DTYPE_F32, TPU_DTYPE_BF16, TPU_DTYPE_I32};
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_xport_t *xm = NULL, *xs = NULL;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], naxes, is_auto, rank, size, failed = 0;
    int cases = 0, d, z, nz, groups = 0;
    tpu_coll_kind_t kind = TPU_COLL_PSUM;
    unsigned mask, all;
    size_t b = 0;
    uint64_t call = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setenv("TPUEMU_HOST_SHM", "0", 1);
    if (argc < 4 || tpu_chip_preset(argv[1], &chip, &err) != TPU_OK ||
        tpu_topo_parse_shape(argv[2], dims, &naxes, &err) != TPU_OK ||
        tpu_topo_parse_wrap(argv[3], naxes, wrap, &is_auto, &err) != TPU_OK ||
        tpu_topo_init(&topo, naxes, dims, wrap, 1, &err) != TPU_OK || topo.nchips != size ||
        tpu_xport_mpi_create(MPI_COMM_WORLD, &xm, &err) != TPU_OK ||
        (setenv("TPUEMU_HOST_SHM", "1", 1), setenv("TPUEMU_HOST_SHM_BYTES", "65536", 1),
         tpu_xport_mpi_create(MPI_COMM_WORLD, &xs, &err)) != TPU_OK) {
        if (rank == 0) {
            fprintf(stderr, "usage: test_shm_psum CHIP SHAPE WRAP (%s)\n", err.msg);
        }
        MPI_Finalize();
        return 1;
    }
    if (argc > 4 && tpu_coll_parse(argv[4], &kind, &err) != TPU_OK) {
        if (rank == 0) {
            fprintf(stderr, "test_shm_psum: %s\n", err.msg);
        }
        MPI_Finalize();
        return 1;
    }
    nz = kind == TPU_COLL_PSUM ? (int)(sizeof(elems) / sizeof(elems[0]))
                               : (int)(sizeof(blocks) / sizeof(blocks[0]));
    /* The two transports are what they claim: messages only, and shared regions. */
    if (xm->ops->shm_region(xm, rank, &b) != NULL || xs->ops->shm_region(xs, rank, &b) == NULL ||
        b != 65536) {
        fprintf(stderr,
                "rank %d: shared regions: none expected on the first transport, 64 KiB "
                "on the second (%zu)\n",
                rank, b);
        failed = 1;
    }
    tpu_chip_link_model(&chip, &link);
    all = (1u << naxes) - 1;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    for (mask = 1; mask <= all && !failed; mask++) {
        int g = tpu_topo_group_size(&topo, mask);

        if (g < 2) {
            continue;
        }
        groups++;
        for (d = 0; d < (kind == TPU_COLL_ALL_GATHER ? 3 : 4); d++) {
            for (z = 0; z < nz; z++) {
                tpu_coll_desc_t desc;
                tpu_coll_plan_t *plan = NULL;
                uint64_t inb, outb;
                void *in, *om, *os;
                int bad = 0;

                tpu_coll_desc_init(&desc);
                desc.kind = kind;
                desc.axes = mask;
                desc.dtype = dtypes[d < 3 ? d : 0];
                desc.op = d < 3 ? TPU_REDOP_SUM : TPU_REDOP_MAX;
                desc.bytes = (kind == TPU_COLL_PSUM ? elems[z] : blocks[z] * (uint64_t)g) *
                             (uint64_t)tpu_dtype_size(desc.dtype);
                if (tpu_coll_plan_create(&topo, &link, &desc, &plan, &err) != TPU_OK) {
                    fprintf(stderr, "rank %d: plan: %s\n", rank, err.msg);
                    failed = 1;
                    continue;
                }
                tpu_coll_plan_sizes(plan, &inb, &outb);
                in = malloc(inb);
                om = calloc(1, outb);
                os = calloc(1, outb);
                fill_rough(rank, in, inb, &desc.dtype);
                bad |= run(xm, plan, call++, in, om, "messages");
                bad |= run(xs, plan, call++, in, os, "shm");
                if (!bad && memcmp(om, os, outb) != 0) {
                    fprintf(stderr,
                            "rank %d: %s mask %u (groups of %d) %s %s %llu bytes: shared "
                            "memory and messages differ\n",
                            rank, tpu_coll_name(kind), mask, g, tpu_dtype_name(desc.dtype),
                            tpu_redop_name(desc.op), (unsigned long long)desc.bytes);
                    bad = 1;
                }
                if (!bad && rank == 0 && d == 0) {
                    void *lb = calloc(1, outb);

                    bad |= loopback0(&topo, plan, lb, outb);
                    if (!bad && memcmp(lb, os, outb) != 0) {
                        fprintf(stderr,
                                "%s mask %u %llu bytes: loopback and shared memory "
                                "differ on chip 0\n",
                                tpu_coll_name(kind), mask, (unsigned long long)desc.bytes);
                        bad = 1;
                    }
                    free(lb);
                }
                failed |= bad;
                cases++;
                free(in);
                free(om);
                free(os);
                tpu_coll_plan_destroy(plan);
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (!failed) {
        failed = mismatch(xs, &topo, link, kind, rank, size, call);
        MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("%s %s %s wrap %s: %d groupings, %d cases on %d ranks: %s\n", tpu_coll_name(kind),
               argv[1], argv[2], argv[3], groups, cases, size, failed ? "FAILED" : "all passed");
    }
    tpu_xport_destroy(xs);
    tpu_xport_destroy(xm);
    MPI_Finalize();
    return failed;
}
