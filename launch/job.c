/* MPI jobs: start-up checks, the rank-to-chip order, and verified collectives. */
#include "job.h"

#include "tpu/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int tpu_job_start(const tpu_opts_t *o, int *argc, char ***argv, tpu_job_t *job)
{
    tpu_err_t err = {0};
    tpu_status_t status;

    memset(job, 0, sizeof(*job));
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &job->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job->nranks);
    status = tpu_pod_setup(o, &job->pod, &err);
    if (status == TPU_OK && job->nranks != job->pod.topo.nchips) {
        status = tpu_err_set(
            &err, TPU_ERR_INVALID,
            "topology %s%s has %d chips and needs %d ranks (mpirun -n %d), but this job has %d",
            job->pod.shape, job->pod.topo.slices > 1 ? " x slices" : "", job->pod.topo.nchips,
            job->pod.topo.nchips, job->pod.topo.nchips, job->nranks);
    }
    if (status != TPU_OK) {
        if (job->world_rank == 0) {
            tpu_die_msg(err.msg);
        }
        MPI_Finalize();
        return TPU_EXIT_USAGE;
    }
    job->chip = tpu_place_chip_of_rank(&job->pod.topo, job->pod.chip.host_dims, job->world_rank);
    MPI_Comm_split(MPI_COMM_WORLD, 0, job->chip, &job->comm);
    status = tpu_xport_mpi_create(job->comm, &job->x, &err);
    if (status == TPU_OK) {
        status = tpu_place_local(job->comm, &job->place, &err);
    }
    if (status != TPU_OK) {
        tpu_job_abort(job, err.msg);
    }
    return -1;
}

int tpu_job_end(tpu_job_t *job, int code)
{
    tpu_xport_destroy(job->x);
    job->x = NULL;
    if (job->comm != MPI_COMM_NULL && job->comm != 0) {
        MPI_Comm_free(&job->comm);
    }
    MPI_Finalize();
    return code;
}

void tpu_job_abort(tpu_job_t *job, const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
    fflush(stderr);
    (void)job;
    MPI_Abort(MPI_COMM_WORLD, TPU_EXIT_FAIL);
}

/*
 * The input of every chip: small integers, exact in f32, bf16 and i32, so that
 * every sum is exact whatever the order and results compare bit for bit.
 */
static void fill(int chip, void *buf, uint64_t bytes, void *arg)
{
    tpu_dtype_t dtype = *(const tpu_dtype_t *)arg;
    uint64_t i, n = bytes / (uint64_t)tpu_dtype_size(dtype);

    for (i = 0; i < n; i++) {
        int v = (int)((chip * 7u + i * 3u + (i >> 9)) % 17u) - 8;

        if (dtype == TPU_DTYPE_F32) {
            ((float *)buf)[i] = (float)v;
        } else if (dtype == TPU_DTYPE_I32) {
            ((int32_t *)buf)[i] = v;
        } else {
            float f = (float)v;
            uint32_t u;

            memcpy(&u, &f, 4);
            ((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
        }
    }
}

tpu_status_t tpu_case_init(tpu_case_t *c, const tpu_job_t *job, const tpu_coll_desc_t *desc,
                           tpu_err_t *err)
{
    tpu_status_t status;

    memset(c, 0, sizeof(*c));
    c->desc = *desc;
    status = tpu_coll_plan_create(&job->pod.topo, &job->pod.link, desc, &c->plan, err);
    if (status != TPU_OK) {
        return status;
    }
    status = tpu_coll_exec_create(c->plan, job->x, &c->exec, err);
    if (status != TPU_OK) {
        tpu_case_fini(c);
        return status;
    }
    c->desc = *tpu_coll_plan_desc(c->plan);
    tpu_coll_plan_sizes(c->plan, &c->in_bytes, &c->out_bytes);
    c->in = malloc(c->in_bytes);
    c->out = calloc(1, c->out_bytes);
    c->ref = calloc(1, c->out_bytes);
    if (c->in == NULL || c->out == NULL || c->ref == NULL) {
        tpu_case_fini(c);
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of host memory for %llu-byte buffers",
                           (unsigned long long)c->out_bytes);
    }
    fill(job->chip, c->in, c->in_bytes, &c->desc.dtype);
    status = tpu_coll_reference(c->plan, job->chip, fill, &c->desc.dtype, c->ref, err);
    if (status != TPU_OK) {
        tpu_case_fini(c);
    }
    return status;
}

void tpu_case_fini(tpu_case_t *c)
{
    tpu_coll_exec_destroy(c->exec);
    tpu_coll_plan_destroy(c->plan);
    free(c->in);
    free(c->out);
    free(c->ref);
    memset(c, 0, sizeof(*c));
}

tpu_status_t tpu_case_run(tpu_case_t *c, tpu_job_t *job, uint64_t call, int check_peers,
                          double timeout, double *modeled_us_p, double *wall_s_p, tpu_err_t *err)
{
    tpu_coll_run_opts_t opts;
    void *in[1], *out[1];
    struct timespec t0, t1;
    tpu_status_t status;

    (void)job; /* the transport is the case's, from tpu_case_init() */
    opts.call = call;
    opts.timeout_s = timeout;
    opts.check_peers = check_peers;
    opts.local_time = 1;
    in[0] = c->in;
    out[0] = c->out;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    status = tpu_coll_exec_run(c->exec, &opts, in, out, modeled_us_p, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *wall_s_p = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return status;
}

long tpu_case_wrong(const tpu_case_t *c, int chip)
{
    int es = tpu_dtype_size(c->desc.dtype);
    uint64_t i, n = c->out_bytes / (uint64_t)es;
    long wrong = 0;

    if ((c->desc.kind == TPU_COLL_P2P && chip != c->desc.dst) ||
        memcmp(c->out, c->ref, c->out_bytes) == 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (memcmp(c->out + i * es, c->ref + i * es, (size_t)es) != 0) {
            wrong++;
        }
    }
    return wrong;
}
