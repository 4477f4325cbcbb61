/*
 * The SPMD layer under mpirun: one chip per rank.  Every rank runs the same
 * array collectives over every mesh axis and pair of axes (whole torus axes and
 * groups that are not) with the MPI transport, and again with the loopback
 * transport (every chip in this process) and model-only: its shard must equal
 * the loopback shard of its chip, and the modeled times must be equal, bit for
 * bit, over the three.  The outcomes are OR-reduced; every rank exits non-zero
 * on failure.
 *
 * usage: mpirun -n N test_spmd_mpi SHAPE WRAP MESH [SLICES]
 */
#include "tpu/chip.h"
#include "tpu/mesh.h"
#include "tpu/mpi.h"
#include "tpu/spmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NARR 16

typedef struct run {
    tpu_xport_t *x;
    tpu_spmd_t *s;
    tpu_array_t *out[NARR];
    int nout;
} run_t;

/* The ops under test on 'axes', appended to r->out. */
static int run_ops(run_t *r, const tpu_mesh_t *mesh, const char *axes, const float *host, int64_t n,
                   tpu_err_t *err)
{
    static const int shift[2] = {0, 1};
    tpu_array_t *a = NULL;
    int64_t shp[2] = {n, 16};
    char spec[128];
    int idx[TPU_MESH_MAX_AXES], na, g = 1, i, perm[64];

    if (tpu_mesh_parse_axes(mesh, axes, idx, &na, err) != TPU_OK) {
        return 1;
    }
    for (i = 0; i < na; i++) {
        g *= tpu_mesh_axis_size(mesh, idx[i]);
    }
    snprintf(spec, sizeof(spec), "(%s)", axes);
    if (tpu_array_create(r->s, 2, shp, TPU_DTYPE_F32, spec, &a, err) != TPU_OK ||
        tpu_array_place(a, host, err) != TPU_OK) {
        return 1;
    }
    for (i = 0; i < g; i++) {
        perm[2 * i] = i;
        perm[2 * i + 1] = (i + shift[1]) % g;
    }
    if (tpu_array_psum(a, axes, TPU_REDOP_SUM, &r->out[r->nout++], err) != TPU_OK ||
        tpu_array_all_gather(a, axes, 1, 1, &r->out[r->nout++], err) != TPU_OK ||
        tpu_array_psum_scatter(a, axes, 1, 1, &r->out[r->nout++], err) != TPU_OK ||
        tpu_array_all_to_all(a, axes, 1, 0, 1, &r->out[r->nout++], err) != TPU_OK ||
        tpu_array_ppermute(a, axes, perm, g, &r->out[r->nout++], err) != TPU_OK) {
        tpu_array_destroy(a);
        return 1;
    }
    (void)shift[0];
    tpu_array_destroy(a);
    return 0;
}

static void run_free(run_t *r)
{
    int i;

    for (i = 0; i < r->nout; i++) {
        tpu_array_destroy(r->out[i]);
    }
    tpu_spmd_destroy(r->s);
    tpu_xport_destroy(r->x);
}

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_mesh_t *mesh = NULL;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES], naxes, is_auto, rank, size, bad = 0, any = 0;
    int a, b;
    float *host = NULL;
    int64_t n;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4 || argc > 5 || tpu_topo_parse_shape(argv[1], dims, &naxes, &err) != TPU_OK ||
        tpu_topo_parse_wrap(argv[2], naxes, wrap, &is_auto, &err) != TPU_OK ||
        tpu_topo_init(&topo, naxes, dims, wrap, argc == 5 ? atoi(argv[4]) : 1, &err) != TPU_OK ||
        tpu_chip_preset("v5e", &chip, &err) != TPU_OK ||
        tpu_mesh_create(&topo, argv[3], NULL, 0, &mesh, &err) != TPU_OK) {
        fprintf(stderr, "usage: test_spmd_mpi SHAPE WRAP MESH [SLICES]: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tpu_chip_link_model(&chip, &link);
    n = (int64_t)topo.nchips * 8;
    host = malloc((size_t)n * 16 * sizeof(float));
    for (a = 0; a < n * 16; a++) {
        host[a] = (float)((a * 37) % 101 - 50);
    }
    for (a = 0; a < tpu_mesh_naxes(mesh) && !bad; a++) {
        for (b = -1; b < tpu_mesh_naxes(mesh) && !bad; b++) {
            char axes[96];
            run_t r[3];
            int k, t, i;

            if (b == a) {
                continue;
            }
            if (b < 0) {
                snprintf(axes, sizeof(axes), "%s", tpu_mesh_axis_name(mesh, a));
            } else {
                snprintf(axes, sizeof(axes), "%s,%s", tpu_mesh_axis_name(mesh, a),
                         tpu_mesh_axis_name(mesh, b));
            }
            memset(r, 0, sizeof(r));
            /* 0: mpi, 1: loopback, 2: model only. */
            if (tpu_xport_mpi_create(MPI_COMM_WORLD, &r[0].x, &err) != TPU_OK ||
                tpu_xport_loopback_create(topo.nchips, &r[1].x, &err) != TPU_OK) {
                fprintf(stderr, "rank %d: transport: %s\n", rank, err.msg);
                bad = 1;
                break;
            }
            for (t = 0; t < 3 && !bad; t++) {
                if (tpu_spmd_create(&topo, &link, &chip, mesh, r[t].x, NULL, &r[t].s, &err) !=
                        TPU_OK ||
                    run_ops(&r[t], mesh, axes, host, n, &err) != TPU_OK) {
                    fprintf(stderr, "rank %d: %s over %s: %s\n", rank,
                            t == 0   ? "mpi"
                            : t == 1 ? "loopback"
                                     : "model",
                            axes, err.msg);
                    bad = 1;
                }
            }
            for (k = 0; k < r[0].nout && !bad; k++) {
                const tpu_spmd_call_t *c0 = tpu_spmd_call_at(r[0].s, k);
                const tpu_spmd_call_t *c1 = tpu_spmd_call_at(r[1].s, k);
                const tpu_spmd_call_t *c2 = tpu_spmd_call_at(r[2].s, k);
                const void *mine = tpu_array_local(r[0].out[k], 0);
                const void *ref = tpu_array_local(r[1].out[k], tpu_spmd_local_chip(r[0].s, 0));

                if (memcmp(mine, ref, tpu_array_local_bytes(r[0].out[k])) != 0) {
                    fprintf(stderr, "rank %d: %s over %s: the shard differs from loopback\n", rank,
                            c0->name, axes);
                    bad = 1;
                }
                if (c0->modeled_us != c1->modeled_us || c0->modeled_us != c2->modeled_us) {
                    fprintf(stderr,
                            "rank %d: %s over %s: modeled %.17g (mpi) %.17g (loopback) "
                            "%.17g (model)\n",
                            rank, c0->name, axes, c0->modeled_us, c1->modeled_us, c2->modeled_us);
                    bad = 1;
                }
                if (rank == 0 && b < 0 && k == 0) {
                    printf("%s over %s: %.3f us (%s)\n", c0->name, axes, c0->modeled_us,
                           c0->algorithm);
                }
            }
            if (!bad) {
                /* The gathered global result of the psum, from every rank, as loopback's. */
                int64_t shp[2];
                size_t bytes;
                float *g0, *g1;

                tpu_array_shape(r[0].out[0], shp);
                bytes = (size_t)(shp[0] * shp[1]) * sizeof(float);
                g0 = malloc(bytes);
                g1 = malloc(bytes);
                if (tpu_array_gather(r[0].out[0], g0, &err) != TPU_OK ||
                    tpu_array_gather(r[1].out[0], g1, &err) != TPU_OK || memcmp(g0, g1, bytes)) {
                    fprintf(stderr, "rank %d: gather over %s differs: %s\n", rank, axes, err.msg);
                    bad = 1;
                }
                free(g0);
                free(g1);
            }
            for (i = 0; i < 3; i++) {
                run_free(&r[i]);
            }
        }
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s\n", any ? "FAILED" : "all spmd checks passed");
    }
    free(host);
    tpu_mesh_destroy(mesh);
    MPI_Finalize();
    return any ? 1 : 0;
}
