/*
 * Placement: which MPI node, host and core each chip runs on, from MPI (the
 * shared-memory split) and hwloc (the core a rank last ran on and the binding).
 */
#include "placement.h"

#include "alloc.h"
#include "faults.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

/* Core and PU of this process, and whether it is bound, from hwloc. */
static void hw_location(app_place_t *p)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t set, bind;

    p->core = -1;
    p->pu = -1;
    p->node_cores = 0;
    p->node_pus = 0;
    p->bound = 0;
    if (hwloc_topology_init(&topo) != 0) {
        return;
    }
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    p->node_cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    p->node_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    set = hwloc_bitmap_alloc();
    bind = hwloc_bitmap_alloc();
    if (set != NULL && hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0) {
        int pu = hwloc_bitmap_first(set);
        hwloc_obj_t obj = pu >= 0 ? hwloc_get_pu_obj_by_os_index(topo, (unsigned)pu) : NULL;
        hwloc_obj_t core = obj ? hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, obj) : NULL;

        p->pu = pu;
        p->core = core ? (int)core->logical_index : -1;
    }
    if (bind != NULL && hwloc_get_cpubind(topo, bind, HWLOC_CPUBIND_PROCESS) == 0) {
        p->bound = !hwloc_bitmap_isincluded(hwloc_topology_get_complete_cpuset(topo), bind);
    }
    hwloc_bitmap_free(bind);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

tpu_status_t app_place_local(MPI_Comm comm, app_place_t *p, tpu_err_t *err)
{
    MPI_Comm node;
    int len = 0, node_rank, leader, rank, is_leader, idx;

    memset(p, 0, sizeof(*p));
    {
        char name[MPI_MAX_PROCESSOR_NAME];

        MPI_Get_processor_name(name, &len);
        snprintf(p->host, sizeof(p->host), "%.*s", len, name);
    }
    MPI_Comm_rank(comm, &rank);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS) {
        return tpu_err_set(err, TPU_ERR_TRANSPORT, "MPI_Comm_split_type failed");
    }
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &p->node_ranks);
    leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    /* Number the nodes by their leaders' ranks: count the leaders below ours. */
    is_leader = node_rank == 0;
    {
        int nranks, i, *leaders;

        MPI_Comm_size(comm, &nranks);
        leaders = tpu__calloc((size_t)nranks, sizeof(int));
        if (leaders == NULL) {
            MPI_Comm_free(&node);
            return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for placement");
        }
        MPI_Allgather(&is_leader, 1, MPI_INT, leaders, 1, MPI_INT, comm);
        for (idx = 0, i = 0; i < leader; i++) {
            idx += leaders[i];
        }
        tpu__free(leaders);
    }
    p->node = idx;
    MPI_Comm_free(&node);
    hw_location(p);
    return TPU_OK;
}

int app_place_chip_of_rank(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES], int rank)
{
    int chip, seen = 0, h, nhosts = tpu_topo_host_count(topo, host_dims);

    for (h = 0; h < nhosts; h++) {
        for (chip = 0; chip < topo->nchips; chip++) {
            if (tpu_topo_host_of(topo, host_dims, chip) == h && seen++ == rank) {
                return chip;
            }
        }
    }
    return rank;
}

void app_place_print(FILE *out, const tpu_pod_t *pod, const app_place_t *all)
{
    static const app_col_t cols[] = {{"chip", NULL, 5, 0, 0},      {"coords", NULL, 12, 1, 1},
                                     {"host", NULL, 4, 0, 1},      {"rank", NULL, 5, 0, 1},
                                     {"mpi node", NULL, 16, 1, 1}, {"core", NULL, 4, 0, 1},
                                     {"bound", NULL, 5, 0, 1}};
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int chip, a;

    app_table_header(out, "", cols, 7);
    for (chip = 0; chip < t->nchips; chip++) {
        int c[TPU_MAX_AXES], used = 0;
        char coords[32], id[16], host[16], rank[16], node[20], core[16];
        const char *cells[7];

        tpu_topo_coords(t, chip, c);
        coords[0] = '\0';
        if (t->slices > 1) {
            used = snprintf(coords, sizeof(coords), "s%d:", tpu_topo_slice_of(t, chip));
        }
        for (a = 0; a < t->naxes; a++) {
            used +=
                snprintf(coords + used, sizeof(coords) - (size_t)used, "%s%d", a ? "," : "(", c[a]);
        }
        snprintf(coords + used, sizeof(coords) - (size_t)used, ")");
        snprintf(id, sizeof(id), "%d", chip);
        snprintf(host, sizeof(host), "%d", tpu_topo_host_of(t, tpu_pod_chip(pod)->host_dims, chip));
        snprintf(rank, sizeof(rank), "%d", all[chip].rank);
        snprintf(node, sizeof(node), "%.16s", all[chip].host);
        snprintf(core, sizeof(core), "%d", all[chip].core);
        cells[0] = id;
        cells[1] = coords;
        cells[2] = host;
        cells[3] = rank;
        cells[4] = node;
        cells[5] = core;
        cells[6] = all[chip].bound ? "yes" : "no";
        app_table_row(out, "", cols, 7, cells);
    }
}

void app_place_json(app_json_t *j, const tpu_pod_t *pod, const app_place_t *all)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int chip;

    app_json_array(j);
    for (chip = 0; chip < t->nchips; chip++) {
        app_json_object(j);
        app_chip_json_where(j, pod, chip);
        app_json_kint(j, "tpu_host", tpu_topo_host_of(t, tpu_pod_chip(pod)->host_dims, chip));
        app_json_kint(j, "rank", all[chip].rank);
        app_json_kstr(j, "mpi_host", all[chip].host);
        app_json_kint(j, "mpi_node", all[chip].node);
        app_json_kint(j, "core", all[chip].core);
        app_json_kint(j, "pu", all[chip].pu);
        app_json_kbool(j, "bound", all[chip].bound);
        app_json_object_end(j);
    }
    app_json_array_end(j);
}

int app_place_split_hosts(const tpu_pod_t *pod, const app_place_t *all, int *example_host_p)
{
    const tpu_topo_t *t = tpu_pod_topo(pod);
    int nhosts = tpu_topo_host_count(t, tpu_pod_chip(pod)->host_dims), h, chip, bad = 0;

    for (h = 0; h < nhosts; h++) {
        int node = -1, split = 0;

        for (chip = 0; chip < t->nchips; chip++) {
            if (tpu_topo_host_of(t, tpu_pod_chip(pod)->host_dims, chip) != h) {
                continue;
            }
            if (node < 0) {
                node = all[chip].node;
            } else if (all[chip].node != node) {
                split = 1;
            }
        }
        if (split) {
            if (bad == 0) {
                *example_host_p = h;
            }
            bad++;
        }
    }
    return bad;
}
