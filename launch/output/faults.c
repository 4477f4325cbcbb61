/* The faults of a pod as text lines and as a JSON array, and the pod keys of every JSON
 * document and CSV row (faults.h). */
#include "faults.h"

void app_faults_print(FILE *out, const tpu_pod_t *pod, const char *label)
{
    const tpu_faults_t *faults = tpu_pod_faults(pod);
    int i;

    for (i = 0; i < tpu_faults_count(faults); i++) {
        char buf[160];

        tpu_fault_str(tpu_pod_topo(pod), tpu_faults_get(faults, i), buf, sizeof(buf));
        fprintf(out, "%s%s\n", label, buf);
    }
}

void app_faults_json(app_json_t *j, const tpu_pod_t *pod)
{
    const tpu_faults_t *faults = tpu_pod_faults(pod);
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int i, a;

    app_json_karray(j, "faults");
    for (i = 0; i < tpu_faults_count(faults); i++) {
        const tpu_fault_t *f = tpu_faults_get(faults, i);
        char buf[160];
        int c[TPU_MAX_AXES];

        app_json_object(j);
        app_json_kstr(j, "kind", tpu_fault_kind_name(f->kind));
        if (f->kind == TPU_FAULT_SLOW_NIC) {
            app_json_kint(j, "host", f->host);
        } else {
            app_json_kint(j, "chip", f->chip);
            app_json_kint(j, "slice", tpu_topo_slice_of(t, f->chip));
            tpu_topo_coords(t, f->chip, c);
            app_json_karray(j, "coords");
            for (a = 0; a < t->naxes; a++) {
                app_json_int(j, c[a]);
            }
            app_json_array_end(j);
        }
        if (f->kind == TPU_FAULT_SLOW_LINK || f->kind == TPU_FAULT_LINK_DOWN) {
            snprintf(buf, sizeof(buf), "%c%s", f->dir > 0 ? '+' : '-', tpu_topo_axis_name(f->axis));
            app_json_kstr(j, "dir", buf);
            app_json_kbool(j, "both", f->both);
        }
        if (f->kind != TPU_FAULT_LINK_DOWN) {
            app_json_ksig(j, "factor", f->factor, 6);
        }
        tpu_fault_str(t, f, buf, sizeof(buf));
        app_json_kstr(j, "text", buf);
        app_json_object_end(j);
    }
    app_json_array_end(j);
}

void app_chip_json_where(app_json_t *j, const tpu_pod_t *pod, int chip)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int c[TPU_MAX_AXES], a;

    tpu_topo_coords(t, chip, c);
    app_json_kint(j, "chip", chip);
    app_json_kint(j, "slice", tpu_topo_slice_of(t, chip));
    app_json_karray(j, "coords");
    for (a = 0; a < t->naxes; a++) {
        app_json_int(j, c[a]);
    }
    app_json_array_end(j);
}

void app_pod_json_header(app_json_t *j, const tpu_pod_t *pod)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);

    app_json_kstr(j, "chip", tpu_pod_chip(pod)->name);
    app_json_kstr(j, "topology", tpu_pod_shape(pod));
    app_json_kstr(j, "wrap", tpu_pod_wrap(pod));
    app_json_kint(j, "slices", t->slices);
    app_json_kint(j, "chips", t->nchips);
    app_faults_json(j, pod);
}

void app_csv_pod_header(app_csv_t *c, const char *const *names, int n)
{
    static const char *const pod_cols[] = {"chip", "topology", "wrap", "slices"};
    int i;

    for (i = 0; i < 4; i++) {
        app_csv_str(c, pod_cols[i]);
    }
    for (i = 0; i < n; i++) {
        app_csv_str(c, names[i]);
    }
    app_csv_end_row(c);
}

void app_csv_pod(app_csv_t *c, const tpu_pod_t *pod)
{
    app_csv_str(c, tpu_pod_chip(pod)->name);
    app_csv_str(c, tpu_pod_shape(pod));
    app_csv_str(c, tpu_pod_wrap(pod));
    app_csv_int(c, tpu_pod_topo(pod)->slices);
}
