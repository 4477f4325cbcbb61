/* tpuemu info: chip constants, the topology's links, the algorithms. */
#include "info.h"

#include "csv.h"
#include "faults.h"
#include "jobenv.h"
#include "json.h"
#include "podsetup.h"
#include "sink.h"
#include "table.h"

#include <stdio.h>
#include <string.h>

/* The members of one chip, into the object 'j' has open. */
static void chip_json(app_json_t *j, const tpu_chip_spec_t *c)
{
    int i;

    app_json_kstr(j, "chip", c->name);
    app_json_ksig(j, "bf16_flops", c->bf16_flops, 6);
    app_json_ksig(j, "int8_ops", c->int8_ops, 6);
    app_json_ksig(j, "f32_flops", c->f32_flops, 6);
    app_json_ksig(j, "vpu_flops", c->vpu_flops, 6);
    app_json_ksig(j, "hbm_capacity_bytes", c->hbm_bytes, 6);
    app_json_ksig(j, "hbm_bw", c->hbm_bw, 6);
    app_json_ksig(j, "vmem_bytes", c->vmem_bytes, 6);
    app_json_kint(j, "mxu_dim", c->mxu_dim);
    app_json_kint(j, "mxu_count", c->mxu_count);
    app_json_kint(j, "tensorcores", c->tensorcores);
    app_json_ksig(j, "ici_bw", c->ici_bw, 6);
    app_json_ksig(j, "ici_latency_us", c->ici_latency * 1e6, 6);
    app_json_kint(j, "ici_axes", c->ici_axes);
    app_json_karray(j, "max_pod");
    for (i = 0; i < 3; i++) {
        app_json_int(j, c->max_pod[i]);
    }
    app_json_array_end(j);
    app_json_karray(j, "host_dims");
    for (i = 0; i < 3; i++) {
        app_json_int(j, c->host_dims[i]);
    }
    app_json_array_end(j);
    app_json_kint(j, "chips_per_host", tpu_chip_per_host(c));
    app_json_ksig(j, "dcn_bw", c->dcn_bw, 6);
    app_json_ksig(j, "dcn_latency_us", c->dcn_latency * 1e6, 6);
    app_json_kfixed(j, "ridge", tpu_chip_ridge(c), 1);
}

/* --csv: one row per chip, the scalar members of the JSON (max_pod and host_dims as AxBxC). */
static void chip_csv(FILE *f, const tpu_chip_spec_t *const *chips, int n)
{
    static const char *const cols[] = {"chip",           "bf16_flops",     "int8_ops",
                                       "f32_flops",      "vpu_flops",      "hbm_capacity_bytes",
                                       "hbm_bw",         "vmem_bytes",     "mxu_dim",
                                       "mxu_count",      "tensorcores",    "ici_bw",
                                       "ici_latency_us", "ici_axes",       "max_pod",
                                       "host_dims",      "chips_per_host", "dcn_bw",
                                       "dcn_latency_us", "ridge"};
    app_csv_t c;
    int i;

    app_csv_init(&c, f);
    app_csv_header(&c, cols, (int)(sizeof(cols) / sizeof(cols[0])));
    for (i = 0; i < n; i++) {
        const tpu_chip_spec_t *s = chips[i];
        const double nums[7] = {s->bf16_flops, s->int8_ops, s->f32_flops, s->vpu_flops,
                                s->hbm_bytes,  s->hbm_bw,   s->vmem_bytes};
        char pod[48], host[48];
        int k;

        snprintf(pod, sizeof(pod), "%dx%dx%d", s->max_pod[0], s->max_pod[1], s->max_pod[2]);
        snprintf(host, sizeof(host), "%dx%dx%d", s->host_dims[0], s->host_dims[1], s->host_dims[2]);
        app_csv_str(&c, s->name);
        for (k = 0; k < 7; k++) {
            app_csv_fixed(&c, nums[k], 0);
        }
        app_csv_int(&c, s->mxu_dim);
        app_csv_int(&c, s->mxu_count);
        app_csv_int(&c, s->tensorcores);
        app_csv_fixed(&c, s->ici_bw, 0);
        app_csv_fixed(&c, s->ici_latency * 1e6, 0);
        app_csv_int(&c, s->ici_axes);
        app_csv_str(&c, pod);
        app_csv_str(&c, host);
        app_csv_int(&c, tpu_chip_per_host(s));
        app_csv_fixed(&c, s->dcn_bw, 0);
        app_csv_fixed(&c, s->dcn_latency * 1e6, 0);
        app_csv_fixed(&c, tpu_chip_ridge(s), 0);
        app_csv_end_row(&c);
    }
}

/* One row of the chip table: a label, then one formatted cell per chip. */
#define CELL(fmt, ...)                                                  \
    do {                                                                \
        for (i = 0; i < n; i++) {                                       \
            const tpu_chip_spec_t *c = chips[i];                        \
            snprintf(buf[i + 1], sizeof(buf[i + 1]), fmt, __VA_ARGS__); \
        }                                                               \
    } while (0)

static void chip_table(FILE *out, const tpu_chip_spec_t *const *chips, int n)
{
    app_col_t cols[17];
    char buf[17][32];
    const char *cells[17];
    int i, r;
    static const char *const labels[] = {"chip",
                                         "bf16 FLOP/s",
                                         "int8 OP/s",
                                         "HBM bytes",
                                         "HBM bytes/s",
                                         "ridge (FLOP/byte)",
                                         "VMEM MiB",
                                         "MXU",
                                         "MXUs per TensorCore",
                                         "TensorCores",
                                         "ICI bytes/s per link",
                                         "ICI latency us per hop",
                                         "ICI axes",
                                         "max pod",
                                         "chips per host",
                                         "DCN bytes/s per chip"};

    n = n > 16 ? 16 : n;
    cols[0] = (app_col_t){"", NULL, 26, 1, 0};
    for (i = 0; i < n; i++) {
        cols[i + 1] = (app_col_t){"", NULL, 12, 0, 1};
    }
    for (i = 0; i <= n; i++) {
        cells[i] = buf[i];
    }
    for (r = 0; r < (int)(sizeof(labels) / sizeof(labels[0])); r++) {
        snprintf(buf[0], sizeof(buf[0]), "%s", labels[r]);
        switch (r) {
        case 0:
            CELL("%s", c->name);
            break;
        case 1:
            CELL("%.3g", c->bf16_flops);
            break;
        case 2:
            CELL("%.3g", c->int8_ops);
            break;
        case 3:
            CELL("%.3g", c->hbm_bytes);
            break;
        case 4:
            CELL("%.3g", c->hbm_bw);
            break;
        case 5:
            CELL("%.0f", tpu_chip_ridge(c));
            break;
        case 6:
            CELL("%.0f", c->vmem_bytes / 1048576.0);
            break;
        case 7:
            CELL("%dx%d", c->mxu_dim, c->mxu_dim);
            break;
        case 8:
            CELL("%d", c->mxu_count);
            break;
        case 9:
            CELL("%d", c->tensorcores);
            break;
        case 10:
            CELL("%.3g", c->ici_bw);
            break;
        case 11:
            CELL("%.2f", c->ici_latency * 1e6);
            break;
        case 12:
            CELL("%d", c->ici_axes);
            break;
        case 13:
            CELL("%dx%dx%d", c->max_pod[0], c->max_pod[1], c->max_pod[2]);
            break;
        case 14:
            CELL("%d", tpu_chip_per_host(c));
            break;
        default:
            CELL("%.4g", c->dcn_bw);
            break;
        }
        app_table_row(out, "", cols, n + 1, cells);
    }
}
#undef CELL

/* One directed link of a chip: its axis, direction (+1, -1), far end and id. */
typedef struct nb {
    int axis, dir, neighbor, link;
} nb_t;

/* The directed links of 'chip' in the dump's order (each axis, + before -); their count. */
static int chip_links(const tpu_topo_t *t, int chip, nb_t nb[2 * TPU_MAX_AXES])
{
    int a, d, n = 0;

    for (a = 0; a < t->naxes; a++) {
        for (d = 1; d >= -1; d -= 2) {
            int link = tpu_topo_link(t, chip, a, d);

            if (link >= 0) {
                nb[n].axis = a;
                nb[n].dir = d;
                nb[n].neighbor = tpu_topo_neighbor(t, chip, a, d);
                nb[n++].link = link;
            }
        }
    }
    return n;
}

/* "+x", "-y": a link's direction as the JSON and CSV name it. */
static void dir_name(const nb_t *nb, char *buf, size_t len)
{
    snprintf(buf, len, "%c%s", nb->dir > 0 ? '+' : '-', tpu_topo_axis_name(nb->axis));
}

/* The golden dump: every chip's coordinates, and each link with its id. */
static void dump_topology(FILE *out, const tpu_pod_t *pod)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    nb_t nb[2 * TPU_MAX_AXES];
    int chip, a, i, n;

    fprintf(out, "topology %s wrap %s slices %d chips %d links %d\n", tpu_pod_shape(pod),
            tpu_pod_wrap(pod), t->slices, t->nchips, t->nlinks);
    for (chip = 0; chip < t->nchips; chip++) {
        int c[TPU_MAX_AXES];

        tpu_topo_coords(t, chip, c);
        fprintf(out, "chip %d slice %d coords", chip, tpu_topo_slice_of(t, chip));
        for (a = 0; a < t->naxes; a++) {
            fprintf(out, " %d", c[a]);
        }
        fputc('\n', out);
        n = chip_links(t, chip, nb);
        for (i = 0; i < n; i++) {
            fprintf(out, "  %s%c -> chip %d link %d\n", tpu_topo_axis_name(nb[i].axis),
                    nb[i].dir > 0 ? '+' : '-', nb[i].neighbor, nb[i].link);
        }
    }
}

/* --dump-topology --json: the pod and, under "torus", every chip with its coordinates
 * and directed links (as dump_topology() prints them). */
static void topology_json(app_json_t *j, const tpu_pod_t *pod)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    nb_t nb[2 * TPU_MAX_AXES];
    int chip, i, n;

    app_json_document(j, "info");
    app_json_kstr(j, "topology", tpu_pod_shape(pod));
    app_json_kstr(j, "wrap", tpu_pod_wrap(pod));
    app_json_kint(j, "slices", t->slices);
    app_json_kint(j, "chips", t->nchips);
    app_json_karray(j, "torus");
    for (chip = 0; chip < t->nchips; chip++) {
        app_json_object(j);
        app_chip_json_where(j, pod, chip);
        app_json_karray(j, "neighbors");
        n = chip_links(t, chip, nb);
        for (i = 0; i < n; i++) {
            char dir[8];

            dir_name(&nb[i], dir, sizeof(dir));
            app_json_object(j);
            app_json_kstr(j, "dir", dir);
            app_json_kint(j, "neighbor", nb[i].neighbor);
            app_json_kint(j, "link_id", nb[i].link);
            app_json_object_end(j);
        }
        app_json_array_end(j);
        app_json_object_end(j);
    }
    app_json_array_end(j);
    app_json_object_end(j);
}

/* --dump-topology --csv: one row per directed link, after the pod columns. */
static void topology_csv(FILE *f, const tpu_pod_t *pod)
{
    static const char *const cols[] = {"chip_id", "slice", "coords", "dir", "neighbor", "link_id"};
    const tpu_topo_t *t = tpu_pod_topo(pod);
    nb_t nb[2 * TPU_MAX_AXES];
    app_csv_t c;
    int chip, a, i, n;

    app_csv_init(&c, f);
    app_csv_pod_header(&c, cols, 6);
    for (chip = 0; chip < t->nchips; chip++) {
        int xyz[TPU_MAX_AXES];
        char coords[64];
        size_t at = 0;

        tpu_topo_coords(t, chip, xyz);
        coords[0] = '\0';
        for (a = 0; a < t->naxes && at < sizeof(coords); a++) {
            at += (size_t)snprintf(coords + at, sizeof(coords) - at, "%s%d", a ? " " : "", xyz[a]);
        }
        n = chip_links(t, chip, nb);
        for (i = 0; i < n; i++) {
            char dir[8];

            dir_name(&nb[i], dir, sizeof(dir));
            app_csv_pod(&c, pod);
            app_csv_int(&c, chip);
            app_csv_int(&c, tpu_topo_slice_of(t, chip));
            app_csv_str(&c, coords);
            app_csv_str(&c, dir);
            app_csv_int(&c, nb[i].neighbor);
            app_csv_int(&c, nb[i].link);
            app_csv_end_row(&c);
        }
    }
}

/* The algorithm registry as a table, or as JSON {"algorithms": [...]}. */
static void algorithms(FILE *out, app_json_t *j)
{
    static const app_col_t cols[] = {{"collective", NULL, 16, 1, 0},
                                     {"algorithm", NULL, 20, 1, 1},
                                     {"what it does", NULL, 0, 1, 1}};
    int i;

    if (j != NULL) {
        app_json_document(j, "info");
        app_json_karray(j, "algorithms");
    } else {
        app_table_header(out, "", cols, 3);
    }
    for (i = 0; i < tpu_coll_algo_count(); i++) {
        tpu_coll_kind_t kind;
        const char *name, *summary, *cells[3];

        tpu_coll_algo_at(i, &kind, &name, &summary);
        if (j != NULL) {
            app_json_object(j);
            app_json_kstr(j, "collective", tpu_coll_name(kind));
            app_json_kstr(j, "algorithm", name);
            app_json_kstr(j, "summary", summary);
            app_json_object_end(j);
        } else {
            cells[0] = tpu_coll_name(kind);
            cells[1] = name;
            cells[2] = summary;
            app_table_row(out, "", cols, 3, cells);
        }
    }
    if (j != NULL) {
        app_json_array_end(j);
        app_json_object_end(j);
    }
}

/* --algorithms --csv: the registry, one row per algorithm. */
static void algorithms_csv(FILE *f)
{
    static const char *const cols[] = {"collective", "algorithm", "summary"};
    app_csv_t c;
    int i;

    app_csv_init(&c, f);
    app_csv_header(&c, cols, 3);
    for (i = 0; i < tpu_coll_algo_count(); i++) {
        tpu_coll_kind_t kind;
        const char *name, *summary;

        tpu_coll_algo_at(i, &kind, &name, &summary);
        app_csv_str(&c, tpu_coll_name(kind));
        app_csv_str(&c, name);
        app_csv_str(&c, summary);
        app_csv_end_row(&c);
    }
}

int app_cmd_info(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    tpu_err_t err = {0};
    FILE *txt = app_sink_text(o->json, o->csv);
    int i, n = 0, code = APP_EXIT_OK;
    const tpu_chip_spec_t *chips[16];
    tpu_pod_t *pod = NULL;
    app_sink_t sink = {NULL, NULL};
    app_json_t j;

    /* Any pod flag builds the pod, so that a bad value is refused, not ignored. */
    if (o->dump_topology || o->chip != NULL || o->config != NULL || o->topology != NULL ||
        o->wrap != NULL || o->slices > 0 || o->ici_bw >= 0 || o->ici_latency_us >= 0 ||
        o->dcn_bw >= 0 || o->dcn_latency_us >= 0) {
        if (app_pod_setup(o, &pod, &err) != TPU_OK) {
            app_die_msg(err.msg);
            return APP_EXIT_USAGE;
        }
    }
    if (o->dump_topology && o->json == NULL && o->csv == NULL) {
        dump_topology(txt, pod);
        goto cleanup;
    }
    if (pod != NULL && (o->chip != NULL || o->config != NULL)) {
        chips[n++] = tpu_pod_chip(pod);
    } else {
        for (i = 0; i < tpu_chip_preset_count() && n < 16; i++) {
            chips[n++] = tpu_chip_preset_at(i);
        }
    }
    if (o->csv != NULL) {
        if (app_sink_check(o->json, o->csv, &err) != TPU_OK ||
            app_sink_open(&sink, o->csv, &err) != TPU_OK) {
            app_die_msg(err.msg);
            code = APP_EXIT_USAGE;
            goto cleanup;
        }
        if (o->dump_topology) {
            topology_csv(sink.f, pod);
        } else if (o->algorithms) {
            algorithms_csv(sink.f);
        } else {
            chip_csv(sink.f, chips, n);
        }
        if (app_sink_close(&sink, &err) != TPU_OK) {
            app_die_msg(err.msg);
            code = APP_EXIT_FAIL;
            goto cleanup;
        }
        if (o->json == NULL) {
            goto cleanup;
        }
    }
    if (o->json == NULL) {
        if (o->algorithms) {
            algorithms(txt, NULL);
            goto cleanup;
        }
        chip_table(txt, chips, n);
        if (!o->quiet) {
            fprintf(txt, "\nSources: shared/reference seed notes and the JAX scaling book; see "
                         "emulator/chip/chip_presets.c.\n");
        }
        goto cleanup;
    }
    if (app_sink_open(&sink, o->json, &err) != TPU_OK) {
        app_die_msg(err.msg);
        code = APP_EXIT_USAGE;
        goto cleanup;
    }
    app_json_init(&j, sink.f);
    if (o->dump_topology) {
        topology_json(&j, pod);
    } else if (o->algorithms) {
        algorithms(NULL, &j);
    } else if (n == 1) {
        app_json_document(&j, "info");
        chip_json(&j, chips[0]);
        app_json_object_end(&j);
    } else {
        app_json_document(&j, "info");
        app_json_karray(&j, "chip_specs");
        for (i = 0; i < n; i++) {
            app_json_object(&j);
            chip_json(&j, chips[i]);
            app_json_object_end(&j);
        }
        app_json_array_end(&j);
        app_json_object_end(&j);
    }
    if (app_json_end(&j, &err) != TPU_OK || app_sink_close(&sink, &err) != TPU_OK) {
        app_sink_close(&sink, NULL);
        app_die_msg(err.msg);
        code = APP_EXIT_FAIL;
    }
cleanup:
    tpu_pod_destroy(pod);
    return code;
}
