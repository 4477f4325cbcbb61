/*
 * The engine's time of one collective row of the transformer's step (for
 * transformer_cost_prog.c, which builds the rows): the mesh axes of a mask (worked
 * out once per engine), the row's groups, its key in the time cache (every group's
 * chips in order, the kind, the op, the element count: the engine's plan is a function
 * of the groups alone, whatever mesh axes spell them, so layouts whose axes make the
 * same groups share the time), and the engine's call on a miss.
 * In a search (a time cache given) the engine's plan is dropped once timed: the
 * search keeps times, not plans, so its memory is one plan's at a time.
 *
 * The datacenter network behind the NICs (compiled, plan.dcn_fabric_bw > 0): the
 * engine's DCN path ends at each host's NIC, so a row whose groups span S >= 2
 * slices (over dcn, or a data or fsdp axis laid across slices) is also bounded
 * by the job's cross-slice bytes over the network's capacity.  Every chip's
 * share of the row crosses slices as a ring over the S slices moves it:
 * 2 (S - 1) / S of its B S / g bytes for a psum (reduce-scatter over ICI first,
 * g chips a group), (S - 1) / S for a gather or a scatter; all chips at once.
 */
#include "transformer_cost_time.h"

#include "tpu/topo.h"

#include <stdio.h>
#include <string.h>

unsigned tpu__xfmr_axes_of(eng_t *e, unsigned mask, char *names, char *layout, size_t len, int *g_p)
{
    unsigned left = 0;
    int order[A_COUNT], n = 0, i, j, g = 1;
    size_t ln = 0, ll = 0;

    if (e->axes_known & (1ull << (mask & 31u))) { /* worked out before for this engine */
        memcpy(names, e->axes_names[mask & 31u], len);
        memcpy(layout, e->axes_layout[mask & 31u], len);
        *g_p = e->axes_g[mask & 31u];
        return e->axes_left[mask & 31u];
    }
    for (i = 0; i < A_COUNT; i++) {
        if ((mask & BIT(i)) && e->size[i] > 1) {
            order[n++] = i;
        }
    }
    for (i = 1; i < n; i++) { /* the mesh's order */
        for (j = i; j > 0 && e->mesh_idx[order[j]] < e->mesh_idx[order[j - 1]]; j--) {
            int t = order[j];

            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    }
    names[0] = layout[0] = '\0';
    for (i = 0; i < n; i++) {
        char lay[48];
        int a = order[i];

        tpu_mesh_axis_layout(e->mesh, e->mesh_idx[a], lay, sizeof(lay));
        ln += (size_t)snprintf(names + ln, len - (ln < len ? ln : len), "%s%s", i ? "," : "",
                               e->name[a]);
        ll += (size_t)snprintf(layout + ll, len - (ll < len ? ll : len), "%s%s", i ? "," : "", lay);
        left |= BIT(a);
        g *= e->size[a];
    }
    *g_p = g;
    if (len == sizeof(e->axes_names[0])) {
        memcpy(e->axes_names[mask & 31u], names, len);
        memcpy(e->axes_layout[mask & 31u], layout, len);
        e->axes_g[mask & 31u] = g;
        e->axes_left[mask & 31u] = left;
        e->axes_known |= 1ull << (mask & 31u);
    }
    return left;
}

/* The slices a group spans: a mesh lays every group evenly over its slices, so the group's
 * size over its chips in the first chip's slice. */
static int slices_of(const eng_t *e, const tpu_groups_t *gr)
{
    const int per_slice = tpu_pod_topo(e->pod)->chips_per_slice;
    const int first = gr->chips[0] / per_slice;
    int i, here = 0;

    for (i = 0; i < gr->size; i++) {
        here += gr->chips[i] / per_slice == first;
    }
    return gr->size / here;
}

/* The row's time under the network's capacity (see the top) when its groups span 'S'
 * slices, in us (0: no bound). */
static double fabric_us(const tpu_xfmr_cost_t *c, const tpu_xfmr_cost_coll_t *row, uint64_t count,
                        int S)
{
    const eng_t *e = c->engine;
    const double per = 4.0 * (double)count * S / row->group_size;
    const double ring = (row->kind == TPU_COLL_PSUM ? 2 : 1) * (double)(S - 1) / S;

    if (!e->plan.compiled || e->plan.dcn_fabric_bw <= 0 || S < 2) {
        return 0;
    }
    return 1e6 * (double)c->chips * ring * per / e->plan.dcn_fabric_bw;
}

/* The engine's time of the row's collective of 'count' elements (its own convention). */
static tpu_status_t engine_time(eng_t *e, tpu_xfmr_cost_coll_t *row, uint64_t count, tpu_err_t *err)
{
    const tpu_spmd_call_t *call;
    tpu_status_t status;

    if (row->kind == TPU_COLL_ALL_GATHER) {
        status = tpu_spmd_all_gather(e->spmd, row->mesh_axis, TPU_DTYPE_F32,
                                     count / (uint64_t)row->group_size, NULL, NULL, err);
    } else if (row->kind == TPU_COLL_REDUCE_SCATTER) {
        status = tpu_spmd_psum_scatter(e->spmd, row->mesh_axis, TPU_DTYPE_F32, TPU_REDOP_SUM, count,
                                       NULL, NULL, err);
    } else {
        status =
            tpu_spmd_psum(e->spmd, row->mesh_axis, TPU_DTYPE_F32, row->op, count, NULL, NULL, err);
    }
    if (status != TPU_OK) {
        return status;
    }
    call = tpu_spmd_call_at(e->spmd, tpu_spmd_call_count(e->spmd) - 1);
    if (call != NULL) {
        row->bytes = call->bytes;
        row->modeled_us = call->modeled_us;
        row->plan = call->plan;
        snprintf(row->algorithm, sizeof(row->algorithm), "%s", call->algorithm);
    }
    tpu_spmd_log_clear(e->spmd);
    if (e->plan.cache != NULL) { /* a search: the time is kept, the plan is not (memory) */
        row->plan = NULL;
        tpu_spmd_destroy(e->spmd);
        e->spmd = NULL;
    }
    return TPU_OK;
}

tpu_status_t tpu__xfmr_row_time(tpu_xfmr_cost_t *c, tpu_xfmr_cost_coll_t *row, uint64_t count,
                                tpu_err_t *err)
{
    eng_t *e = c->engine;
    tpu_groups_t gr;
    tpu_status_t status;

    memset(&gr, 0, sizeof(gr));
    status = tpu_mesh_groups(e->mesh, row->mesh_axis, &gr, err);
    if (status != TPU_OK) {
        return status;
    }
    tpu_groups_str(&gr, row->group_ids, (int)sizeof(row->group_ids));
    {
        char key[320];
        uint64_t h = 14695981039346656037ull; /* FNV-1a of every group's chips */
        int64_t i;

        for (i = 0; i < (int64_t)gr.ngroups * gr.size; i++) {
            h = (h ^ (uint64_t)(uint32_t)gr.chips[i]) * 1099511628211ull;
        }
        snprintf(key, sizeof(key), "%016llx|%d|%d|%d|%d|%llu", (unsigned long long)h, gr.ngroups,
                 gr.size, (int)row->kind, (int)row->op, (unsigned long long)count);
        if (tpu__xfmr_cache_get(e->plan.cache, key, &row->modeled_us, row->algorithm,
                                sizeof(row->algorithm))) {
            status = TPU_OK;
        } else {
            status = tpu__xfmr_cost_spmd(c, err);
            status = status == TPU_OK ? engine_time(e, row, count, err) : status;
            if (status == TPU_OK) {
                tpu__xfmr_cache_put(e->plan.cache, key, row->modeled_us, row->algorithm);
            }
        }
    }
    if (status == TPU_OK && e->plan.compiled && e->plan.dcn_fabric_bw > 0) {
        const double bound = fabric_us(c, row, count, slices_of(e, &gr));

        if (bound > row->modeled_us) {
            row->modeled_us = bound;
            snprintf(row->algorithm + strlen(row->algorithm),
                     sizeof(row->algorithm) - strlen(row->algorithm), "+fabric");
        }
    }
    tpu_groups_fini(&gr);
    return status;
}
