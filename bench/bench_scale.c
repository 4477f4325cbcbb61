/*
 * Scale of the model and of one rank's part (issue 13 items 5 and 6): for one
 * collective on one pod, the time to plan it (select and build), the time of
 * tpu_coll_plan_model(), and the time and memory of one rank's run object (the
 * data schedule of its own chip and its modeled times) over a transport that
 * hosts one chip of the pod, as an MPI rank does.  Prints one line (flows: the
 * pod's; plan flows: those the plan built and walked); the peak
 * resident memory of the process (VmHWM) is the last figure.  A benchmark, not a
 * test: it never fails on a timing.  bench/scale.sh runs it over pods of 16,
 * 256 and 8,960 chips.
 *
 *   usage: bench_scale SHAPE WRAP COLLECTIVE BYTES [CHIP [ALGO [AXES [MESH]]]]
 *
 * ALGO: a registry name to force (--algo), "-" or absent to let the cost model
 * choose; "pairs" for ppermute gives the shift by one along x as explicit pairs.
 * AXES: "x,y" etc. (default: every axis; ppermute: x).  With MESH (a mesh spec,
 * "data=64,model=140"), AXES names mesh axes and the collective runs over their
 * groups (tpu_mesh_groups), as JAX's replica groups.  The chip is v5p (its
 * preset's link model: the modeled figure is 'tpuemu model --chip v5p''s).
 */
#include "tpu/chip.h"
#include "tpu/coll.h"
#include "tpu/mesh.h"
#include "tpu/topo.h"
#include "tpu/xport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long vm_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, strlen(key)) == 0) {
            kb = atol(line + strlen(key) + 1);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

/* A transport that hosts one chip and moves nothing: the run object is only built. */
static void no_destroy(tpu_xport_t *x)
{
    (void)x;
}

int main(int argc, char **argv)
{
    static tpu_xport_ops_t ops;
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_chip_spec_t spec;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_exec_t *exec = NULL;
    tpu_coll_result_t res;
    tpu_xport_t x;
    int dims[TPU_MAX_AXES], w[TPU_MAX_AXES], naxes, is_auto, chip;
    int32_t *pairs = NULL;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t groups;
    double t0, t1, t2, t3;
    long rss0;

    if (argc < 5) {
        fprintf(stderr,
                "usage: bench_scale SHAPE WRAP COLLECTIVE BYTES [CHIP [ALGO [AXES [MESH]]]]\n");
        return 2;
    }
    if (tpu_topo_parse_shape(argv[1], dims, &naxes, &err) != TPU_OK ||
        tpu_topo_parse_wrap(argv[2], naxes, w, &is_auto, &err) != TPU_OK ||
        tpu_topo_init(&topo, naxes, dims, w, 1, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    /* v5p's link model, as 'tpuemu model --chip v5p' times it. */
    if (tpu_chip_preset("v5p", &spec, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    tpu_chip_link_model(&spec, &link);
    tpu_coll_desc_init(&d);
    if (tpu_coll_parse(argv[3], &d.kind, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    d.axes = d.kind == TPU_COLL_PPERMUTE ? 1u : (1u << naxes) - 1; /* a shift: along x */
    d.bytes = strtoull(argv[4], NULL, 10);
    chip = argc > 5 ? atoi(argv[5]) : 0;
    if (argc > 6 && strcmp(argv[6], "-") != 0) {
        snprintf(d.algo, sizeof(d.algo), "%s", argv[6]);
    }
    memset(&groups, 0, sizeof(groups));
    if (argc > 8) {
        if (tpu_mesh_create(&topo, argv[8], NULL, 0, &mesh, &err) != TPU_OK ||
            tpu_mesh_groups(mesh, argv[7], &groups, &err) != TPU_OK) {
            fprintf(stderr, "bench_scale: %s\n", err.msg);
            return 2;
        }
        d.groups = &groups;
    } else if (argc > 7 && tpu_topo_parse_axes(&topo, argv[7], &d.axes, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    if (d.kind == TPU_COLL_PPERMUTE && strcmp(d.algo, "pairs") == 0) {
        /* The shift by one along x, as explicit pairs. */
        int c, coords[TPU_MAX_AXES];

        pairs = malloc((size_t)topo.nchips * 2 * sizeof(int32_t));
        if (pairs == NULL) {
            return 2;
        }
        for (c = 0; c < topo.nchips; c++) {
            tpu_topo_coords(&topo, c, coords);
            coords[0] = (coords[0] + 1) % topo.dims[0];
            pairs[2 * c] = c;
            pairs[2 * c + 1] = tpu_topo_chip(&topo, 0, coords);
        }
        d.pairs = pairs;
        d.npairs = topo.nchips;
    }
    rss0 = vm_kb("VmRSS:");
    t0 = now_s();
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    t1 = now_s();
    if (tpu_coll_plan_model(plan, &res, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    t2 = now_s();
    memset(&x, 0, sizeof(x));
    ops.size = sizeof(ops);
    ops.name = "one-chip";
    ops.destroy = no_destroy;
    x.ops = &ops;
    x.nchips = topo.nchips;
    x.nlocal = 1;
    x.local_chips = &chip;
    x.moves_data = 1;
    x.tag_ub = 2147483647;
    if (tpu_coll_exec_create(plan, &x, &exec, &err) != TPU_OK) {
        fprintf(stderr, "bench_scale: %s\n", err.msg);
        return 2;
    }
    t3 = now_s();
    printf("%-9s %-5s %-14s %-13s %12s  chips %5d  plan %8.3f s  model %7.3f s  rank part %7.3f s"
           "  modeled %10.3f us  flows %11lld  plan flows %10lld  RSS start %6ld KB peak %7ld KB\n",
           argv[1], argv[2], argv[3], tpu_coll_plan_algo(plan), argv[4], topo.nchips, t1 - t0,
           t2 - t1, t3 - t2, res.modeled_us, (long long)res.flows,
           (long long)tpu_coll_plan_model_flows(plan), rss0, vm_kb("VmHWM:"));
    tpu_coll_exec_destroy(exec);
    tpu_coll_plan_destroy(plan);
    free(pairs);
    tpu_groups_fini(&groups);
    tpu_mesh_destroy(mesh);
    return 0;
}
