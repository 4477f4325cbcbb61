/* tpuemu model: a collective modeled in one process, through the sim path. */
#include "launch.h"

#include <string.h>
#include <time.h>

int tpu_cmd_model(const tpu_opts_t *o)
{
    tpu_err_t err = {0};
    tpu_pod_t pod;
    tpu_coll_desc_t desc;
    tpu_coll_plan_t *plan = NULL;
    tpu_coll_result_t res;
    char axes[32];
    double ideal;
    struct timespec t0, t1;
    int a;

    if (tpu_pod_setup(o, &pod, &err) != TPU_OK ||
        tpu_desc_setup(o, &pod, o->bytes ? o->bytes : "1M", &desc, &err) != TPU_OK) {
        tpu_die_msg(err.msg);
        return TPU_EXIT_USAGE;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (tpu_coll_plan_create(&pod.topo, &pod.link, &desc, &plan, &err) != TPU_OK) {
        tpu_die_msg(err.msg);
        return err.status == TPU_ERR_NO_MEMORY ? TPU_EXIT_FAIL : TPU_EXIT_USAGE;
    }
    if (tpu_coll_plan_model(plan, &res, &err) != TPU_OK) {
        tpu_die_msg(err.msg);
        tpu_coll_plan_destroy(plan);
        return TPU_EXIT_FAIL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    desc = *tpu_coll_plan_desc(plan); /* as resolved: p2p chips filled in */
    tpu_coll_plan_destroy(plan);
    desc.axes = desc.kind == TPU_COLL_P2P ? 0 : desc.axes;
    tpu_topo_axes_str(desc.axes, axes, sizeof(axes));
    ideal = tpu_coll_ideal_us(&pod.topo, &pod.link, &desc);
    if ((double)desc.bytes > pod.chip.hbm_bytes && !o->quiet) {
        fprintf(stderr, "tpuemu: note: %llu bytes exceed the %s's HBM (%.0f GB); modeled anyway\n",
                (unsigned long long)desc.bytes, pod.chip.name, pod.chip.hbm_bytes / 1e9);
    }
    if (o->json != NULL) {
        int close_out;
        FILE *out = tpu_open_output(o->json, &close_out, &err);

        if (out == NULL) {
            tpu_die_msg(err.msg);
            return TPU_EXIT_USAGE;
        }
        fprintf(out, "{\"chip\": ");
        tpu_json_str(out, pod.chip.name);
        fprintf(out,
                ", \"topology\": \"%s\", \"wrap\": \"%s\", \"slices\": %d, \"chips\": %d, "
                "\"collective\": \"%s\", \"axes\": \"%s\", \"bytes\": %llu, \"dtype\": \"%s\", "
                "\"modeled_us\": %.6f, \"ideal_us\": %.6f, \"algorithm\": ",
                pod.shape, pod.wrap, pod.topo.slices, pod.topo.nchips, tpu_coll_name(desc.kind),
                axes, (unsigned long long)desc.bytes, tpu_dtype_name(desc.dtype), res.modeled_us,
                ideal);
        tpu_json_str(out, res.algorithm);
        fprintf(out, ", \"flows\": %lld, \"steps\": %d, \"link_utilisation\": {",
                (long long)res.flows, res.steps);
        for (a = 0; a <= TPU_AXIS_DCN; a++) {
            fprintf(out, "%s\"%s\": %.4f", a ? ", " : "", tpu_topo_axis_name(a),
                    res.axis[a].utilisation);
        }
        fprintf(out, "}, \"busiest_link_bytes\": {");
        for (a = 0; a <= TPU_AXIS_DCN; a++) {
            fprintf(out, "%s\"%s\": %.0f", a ? ", " : "", tpu_topo_axis_name(a), res.axis[a].bytes);
        }
        fprintf(out, "}, \"model_wall_s\": %.4f}\n",
                (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        if (close_out) {
            fclose(out);
        }
        return TPU_EXIT_OK;
    }
    printf("pod        %s %s (wrap %s), %d slice%s, %d chips\n", pod.chip.name, pod.shape, pod.wrap,
           pod.topo.slices, pod.topo.slices > 1 ? "s" : "", pod.topo.nchips);
    printf("collective %s over %s, %llu bytes %s\n", tpu_coll_name(desc.kind),
           desc.kind == TPU_COLL_P2P ? "-" : axes, (unsigned long long)desc.bytes,
           tpu_dtype_name(desc.dtype));
    printf("algorithm  %s (%lld flows in %d steps)\n", res.algorithm, (long long)res.flows,
           res.steps);
    printf("modeled    %.3f us\n", res.modeled_us);
    printf("formula    %.3f us (published formula, fidelity.md)\n", ideal);
    printf("links      busiest link busy:");
    for (a = 0; a <= TPU_AXIS_DCN; a++) {
        if (res.axis[a].busy_us > 0) {
            printf(" %s %.0f%%", tpu_topo_axis_name(a), 100 * res.axis[a].utilisation);
        }
    }
    printf("\n");
    return TPU_EXIT_OK;
}
