/* tpuemu info: chip constants, the topology's links, the algorithms. */
#include "launch.h"

#include <string.h>

static void chip_json(FILE *out, const tpu_chip_spec_t *c)
{
    fprintf(out, "{\"chip\": ");
    tpu_json_str(out, c->name);
    fprintf(out,
            ", \"bf16_flops\": %g, \"int8_ops\": %g, \"f32_flops\": %g, \"vpu_flops\": %g, "
            "\"hbm_bytes\": %g, \"hbm_bw\": %g, \"vmem_bytes\": %g, \"mxu_dim\": %d, "
            "\"mxu_count\": %d, \"tensorcores\": %d, \"ici_bw\": %g, \"ici_latency_us\": %g, "
            "\"ici_axes\": %d, \"max_pod\": [%d, %d, %d], \"host_dims\": [%d, %d, %d], "
            "\"chips_per_host\": %d, \"dcn_bw\": %g, \"dcn_latency_us\": %g, \"ridge\": %.1f}",
            c->bf16_flops, c->int8_ops, c->f32_flops, c->vpu_flops, c->hbm_bytes, c->hbm_bw,
            c->vmem_bytes, c->mxu_dim, c->mxu_count, c->tensorcores, c->ici_bw,
            c->ici_latency * 1e6, c->ici_axes, c->max_pod[0], c->max_pod[1], c->max_pod[2],
            c->host_dims[0], c->host_dims[1], c->host_dims[2], tpu_chip_per_host(c), c->dcn_bw,
            c->dcn_latency * 1e6, tpu_chip_ridge(c));
}

static void chip_table(FILE *out, const tpu_chip_spec_t *const *chips, int n)
{
    int i;

#define ROW(label, fmt, ...)                     \
    do {                                         \
        fprintf(out, "%-26s", label);            \
        for (i = 0; i < n; i++) {                \
            const tpu_chip_spec_t *c = chips[i]; \
            fprintf(out, fmt, __VA_ARGS__);      \
        }                                        \
        fputc('\n', out);                        \
    } while (0)
    ROW("chip", " %12s", c->name);
    ROW("bf16 FLOP/s", " %12.3g", c->bf16_flops);
    ROW("int8 OP/s", " %12.3g", c->int8_ops);
    ROW("HBM bytes", " %12.3g", c->hbm_bytes);
    ROW("HBM bytes/s", " %12.3g", c->hbm_bw);
    ROW("ridge (FLOP/byte)", " %12.0f", tpu_chip_ridge(c));
    ROW("VMEM MiB", " %12.0f", c->vmem_bytes / 1048576.0);
    ROW("MXU", " %8dx%-3d", c->mxu_dim, c->mxu_dim);
    ROW("MXUs per TensorCore", " %12d", c->mxu_count);
    ROW("TensorCores", " %12d", c->tensorcores);
    ROW("ICI bytes/s per link", " %12.3g", c->ici_bw);
    ROW("ICI latency us per hop", " %12.2f", c->ici_latency * 1e6);
    ROW("ICI axes", " %12d", c->ici_axes);
    ROW("max pod", " %4dx%dx%-3d", c->max_pod[0], c->max_pod[1], c->max_pod[2]);
    ROW("chips per host", " %12d", tpu_chip_per_host(c));
    ROW("DCN bytes/s per chip", " %12.4g", c->dcn_bw);
#undef ROW
}

/* The golden dump: every chip's coordinates, and each link with its id. */
static void dump_topology(FILE *out, const tpu_pod_t *pod)
{
    const tpu_topo_t *t = &pod->topo;
    int chip, a, d;

    fprintf(out, "topology %s wrap %s slices %d chips %d links %d\n", pod->shape, pod->wrap,
            t->slices, t->nchips, t->nlinks);
    for (chip = 0; chip < t->nchips; chip++) {
        int c[TPU_MAX_AXES];

        tpu_topo_coords(t, chip, c);
        fprintf(out, "chip %d slice %d coords", chip, tpu_topo_slice_of(t, chip));
        for (a = 0; a < t->naxes; a++) {
            fprintf(out, " %d", c[a]);
        }
        fputc('\n', out);
        for (a = 0; a < t->naxes; a++) {
            for (d = 1; d >= -1; d -= 2) {
                int link = tpu_topo_link(t, chip, a, d);

                if (link >= 0) {
                    fprintf(out, "  %s%c -> chip %d link %d\n", tpu_topo_axis_name(a),
                            d > 0 ? '+' : '-', tpu_topo_neighbor(t, chip, a, d), link);
                }
            }
        }
    }
}

int tpu_cmd_info(const tpu_opts_t *o)
{
    tpu_err_t err = {0};
    FILE *out = stdout;
    int close_out = 0, i, n = 0;
    const tpu_chip_spec_t *chips[16];
    tpu_pod_t pod;

    if (o->dump_topology) {
        if (tpu_pod_setup(o, &pod, &err) != TPU_OK) {
            tpu_die_msg(err.msg);
            return TPU_EXIT_USAGE;
        }
        dump_topology(stdout, &pod);
        return TPU_EXIT_OK;
    }
    if (o->algorithms) {
        printf("%-16s %-20s %s\n", "collective", "algorithm", "what it does");
        for (i = 0; i < tpu_coll_algo_count(); i++) {
            tpu_coll_kind_t kind;
            const char *name, *summary;

            tpu_coll_algo_at(i, &kind, &name, &summary);
            printf("%-16s %-20s %s\n", tpu_coll_name(kind), name, summary);
        }
        return TPU_EXIT_OK;
    }
    if (o->chip != NULL || o->config != NULL) {
        if (tpu_pod_setup(o, &pod, &err) != TPU_OK) {
            tpu_die_msg(err.msg);
            return TPU_EXIT_USAGE;
        }
        chips[n++] = &pod.chip;
    } else {
        for (i = 0; i < tpu_chip_preset_count(); i++) {
            chips[n++] = tpu_chip_preset_at(i);
        }
    }
    if (o->json != NULL) {
        out = tpu_open_output(o->json, &close_out, &err);
        if (out == NULL) {
            tpu_die_msg(err.msg);
            return TPU_EXIT_USAGE;
        }
        if (n == 1) {
            chip_json(out, chips[0]);
        } else {
            fprintf(out, "[");
            for (i = 0; i < n; i++) {
                fprintf(out, "%s", i ? ",\n " : "");
                chip_json(out, chips[i]);
            }
            fprintf(out, "]");
        }
        fprintf(out, "\n");
        if (close_out) {
            fclose(out);
        }
        return TPU_EXIT_OK;
    }
    chip_table(stdout, chips, n);
    if (!o->quiet) {
        printf("\nSources: shared/reference seed notes and the JAX scaling book; see "
               "emulator/chip_presets.c.\n");
    }
    return TPU_EXIT_OK;
}
