/*
 * Remote DMA in kernels (tpu/rdma.h) over loopback: copies between chips with
 * their semaphores, counting semaphores, the clock (compared with times
 * computed here by hand from the v5e constants: W = 9e10 B/s per link, so
 * 4.5e10 per direction, alpha = 1 us, DMA issue 0.1 us), and every error a
 * kernel author makes: a wait nobody satisfies, a copy too big for its
 * destination, a device outside the pod, two copies racing into one range, a
 * kernel that ends with copies in flight, VMEM buffers over capacity; and the
 * on_wait hook (a chip waiting for another tells a watchdog, as in collectives).
 */
#include "tpu/mesh.h"
#include "tpu/pod.h"
#include "tpu/rdma.h"
#include "tpu/xport.h"

#include "test_main.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define BW    4.5e10 /* v5e bytes/s per link direction */
#define ALPHA 1e-6
#define ISSUE TPU_RDMA_DMA_ISSUE_S
#define MSG   0.05e-6 /* v5e message start (chip_presets.c) */
#define NB    4096    /* bytes per chip buffer */

enum {
    IN,
    OUT,
    SMALL,
    VBUF
};
enum {
    SEND,
    RECV,
    OTHER
};

typedef enum {
    SC_PAIRS,      /* 0 -> 1, 2 <-> 3 (the seed's example) */
    SC_GATHER,     /* 1, 2, 3 -> distinct ranges of chip 0, one semaphore counting 3 */
    SC_SAME_LINK,  /* chip 0 sends two copies to chip 1 over one link */
    SC_COMPUTE,    /* compute 5 us, then a copy */
    SC_AXIS,       /* 4x4: copy to (x+1, y) and (x, y-1) by axis offsets, VMEM to VMEM */
    SC_DEADLOCK,   /* chip 1 waits for a copy nobody sends */
    SC_TOO_SMALL,  /* copy of NB bytes into a buffer of NB/2 */
    SC_BAD_DEVICE, /* device id 7 on 4 chips */
    SC_RACE,       /* chips 1 and 2 both copy into the same bytes of chip 0 */
    SC_IN_FLIGHT,  /* chip 0 never waits for its send */
    SC_SELF,       /* a local DMA: HBM -> HBM on the chip itself */
    SC_BODY_ERROR, /* chip 2's body fails on its own */
    SC_MESH,       /* data=4,model=4: copy to model+1 by the mesh axis' name */
    SC_ON_WAIT     /* chip 0 copies to chip 1 only once the hook saw chips waiting */
} scenario_t;

/* What the on_wait hook saw: calls naming chip -1 (a semaphore) and chip 0. */
typedef struct waits {
    atomic_int any;
    atomic_int chip0;
} waits_t;

typedef struct test_run {
    scenario_t sc;
    const tpu_mesh_t *mesh;
    waits_t *waits; /* SC_ON_WAIT */
} test_run_t;

static void on_wait(void *arg, int chip)
{
    waits_t *w = arg;

    if (chip == -1) {
        atomic_fetch_add(&w->any, 1);
    } else if (chip == 0) {
        atomic_fetch_add(&w->chip0, 1);
    }
}

/*
 * SC_ON_WAIT, chip 0: run (without a copy, so every other chip keeps waiting)
 * until the hook has been called by chip 1 in its wait for the copy (a semaphore:
 * chip -1) and by chip 2 or 3 at the end of the kernel, waiting for chip 0 still
 * in its body.  Both waits last until chip 0 copies, so this ends however the host
 * schedules the threads; the bound (20 s) only turns a missing call into an error.
 */
static tpu_status_t wait_for_hook(const waits_t *w, tpu_err_t *err)
{
    struct timespec t0, now, nap = {0, 1000000};

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&w->any) == 0 || atomic_load(&w->chip0) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 20) {
            return tpu_err_set(err, TPU_ERR_INTERNAL,
                               "on_wait: %d calls for a semaphore, %d for chip 0 in 20 s",
                               atomic_load(&w->any), atomic_load(&w->chip0));
        }
        nanosleep(&nap, NULL);
    }
    return TPU_OK;
}

static tpu_status_t start_wait(tpu_rdma_ctx_t *ctx, const tpu_rdma_copy_t *c, tpu_err_t *err)
{
    tpu_status_t st = tpu_rdma_start(ctx, c, err);

    if (st == TPU_OK) {
        st = tpu_rdma_wait_send(ctx, c, err);
    }
    return st;
}

static tpu_status_t body(tpu_rdma_ctx_t *ctx, void *arg, tpu_err_t *err)
{
    const test_run_t *t = arg;
    int me = tpu_rdma_chip(ctx);
    tpu_rdma_copy_t c, c2;
    tpu_status_t st = TPU_OK;
    int dev;

    switch (t->sc) {
    case SC_PAIRS:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, me == 0 ? 1 : me == 2 ? 3 : 2);
        if (me != 1) {
            st = start_wait(ctx, &c, err);
        }
        if (st == TPU_OK && me != 0) {
            st = tpu_rdma_wait_recv(ctx, &c, err);
        }
        return st;
    case SC_GATHER:
        if (me != 0) {
            tpu_rdma_copy_init(&c, IN, 0, OUT, (uint64_t)me * (NB / 4), NB / 4, SEND, RECV, 0);
            return start_wait(ctx, &c, err);
        }
        return tpu_rdma_sem_wait(ctx, RECV, 3, err);
    case SC_SAME_LINK:
        if (me == 0) {
            tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB / 2, SEND, RECV, 1);
            tpu_rdma_copy_init(&c2, IN, NB / 2, OUT, NB / 2, NB / 2, SEND, RECV, 1);
            st = tpu_rdma_start(ctx, &c, err);
            if (st == TPU_OK) {
                st = tpu_rdma_start(ctx, &c2, err);
            }
            return st == TPU_OK ? tpu_rdma_sem_wait(ctx, SEND, 2, err) : st;
        }
        return me == 1 ? tpu_rdma_sem_wait(ctx, RECV, 2, err) : TPU_OK;
    case SC_COMPUTE:
        tpu_rdma_compute(ctx, 5e-6);
        if (me == 0) {
            tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 1);
            return start_wait(ctx, &c, err);
        }
        if (me == 1) {
            tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 1);
            return tpu_rdma_wait_recv(ctx, &c, err);
        }
        return TPU_OK;
    case SC_AXIS:
        /* Every chip sends its VMEM buffer to (x+1, y), and then to (x, y-1). */
        memcpy(tpu_rdma_buf_data(ctx, VBUF), tpu_rdma_buf_data(ctx, IN), NB);
        st = tpu_rdma_axis_peer(ctx, 0, +1, &dev, err);
        tpu_rdma_copy_init(&c, VBUF, 0, OUT, 0, NB / 2, SEND, RECV, dev);
        if (st == TPU_OK) {
            st = tpu_rdma_axis_peer(ctx, 1, -1, &dev, err);
        }
        tpu_rdma_copy_init(&c2, VBUF, NB / 2, OUT, NB / 2, NB / 2, SEND, RECV, dev);
        if (st == TPU_OK) {
            st = tpu_rdma_start(ctx, &c, err);
        }
        if (st == TPU_OK) {
            st = tpu_rdma_start(ctx, &c2, err);
        }
        if (st == TPU_OK) {
            st = tpu_rdma_sem_wait(ctx, SEND, 2, err);
        }
        return st == TPU_OK ? tpu_rdma_sem_wait(ctx, RECV, 2, err) : st;
    case SC_DEADLOCK:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 1);
        return me == 1 ? tpu_rdma_wait_recv(ctx, &c, err) : TPU_OK;
    case SC_TOO_SMALL:
        tpu_rdma_copy_init(&c, IN, 0, SMALL, 0, NB, SEND, RECV, 1);
        return me == 0 ? start_wait(ctx, &c, err) : TPU_OK;
    case SC_BAD_DEVICE:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 7);
        return me == 3 ? start_wait(ctx, &c, err) : TPU_OK;
    case SC_RACE:
        if (me == 1 || me == 2) {
            tpu_rdma_copy_init(&c, IN, 0, OUT, (uint64_t)me * 512, 1024, SEND, RECV, 0);
            return start_wait(ctx, &c, err);
        }
        return me == 0 ? tpu_rdma_sem_wait(ctx, RECV, 2, err) : TPU_OK;
    case SC_IN_FLIGHT:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 1);
        if (me == 0) {
            return tpu_rdma_start(ctx, &c, err);
        }
        return me == 1 ? tpu_rdma_wait_recv(ctx, &c, err) : TPU_OK;
    case SC_SELF:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, me);
        st = start_wait(ctx, &c, err);
        return st == TPU_OK ? tpu_rdma_wait_recv(ctx, &c, err) : st;
    case SC_MESH:
        st = tpu_rdma_mesh_peer(ctx, t->mesh, "model", +1, &dev, err);
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, dev);
        if (st == TPU_OK) {
            st = start_wait(ctx, &c, err);
        }
        if (st == TPU_OK) {
            st = tpu_rdma_wait_recv(ctx, &c, err);
        }
        if (st == TPU_OK && tpu_rdma_mesh_peer(ctx, t->mesh, "modl", 1, &dev, err) == TPU_OK) {
            st = tpu_err_set(err, TPU_ERR_INTERNAL, "a misspelled axis was accepted");
        }
        tpu_err_clear(err);
        return st;
    case SC_BODY_ERROR:
        if (me == 2) {
            return tpu_err_set(err, TPU_ERR_INVALID, "the body of chip 2 gave up");
        }
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 2);
        return me == 1 ? tpu_rdma_wait_recv(ctx, &c, err) : TPU_OK;
    case SC_ON_WAIT:
        tpu_rdma_copy_init(&c, IN, 0, OUT, 0, NB, SEND, RECV, 1);
        if (me == 0) {
            st = wait_for_hook(t->waits, err);
            return st == TPU_OK ? start_wait(ctx, &c, err) : st;
        }
        return me == 1 ? tpu_rdma_wait_recv(ctx, &c, err) : TPU_OK;
    }
    return TPU_OK;
}

typedef struct fixture {
    tpu_pod_t *pod;
    tpu_xport_t *x;
    tpu_rdma_t *rdma;
    unsigned char *in[16];
    unsigned char *out[16];
    tpu_rdma_stats_t stats;
    tpu_err_t err;
} fixture_t;

static void open_pod(fixture_t *f, const char *shape)
{
    tpu_pod_spec_t spec;
    int i;

    memset(f, 0, sizeof(*f));
    tpu_pod_spec_init(&spec);
    spec.chip = "v5e";
    spec.shape = shape;
    spec.wrap = "all";
    assert_int_equal(tpu_pod_create(&spec, &f->pod, &f->err), TPU_OK);
    assert_int_equal(tpu_xport_loopback_create(tpu_pod_topo(f->pod)->nchips, &f->x, &f->err),
                     TPU_OK);
    assert_int_equal(tpu_rdma_create(f->pod, f->x, &f->rdma, &f->err), TPU_OK);
    for (i = 0; i < f->x->nlocal; i++) {
        int j;

        f->in[i] = malloc(NB);
        f->out[i] = calloc(1, NB);
        assert_non_null(f->in[i]);
        assert_non_null(f->out[i]);
        for (j = 0; j < NB; j++) {
            f->in[i][j] = (unsigned char)(i * 31 + j * 7);
        }
    }
}

static void close_pod(fixture_t *f)
{
    int i;

    for (i = 0; i < 16; i++) {
        free(f->in[i]);
        free(f->out[i]);
    }
    tpu_rdma_destroy(f->rdma);
    tpu_xport_destroy(f->x);
    tpu_pod_destroy(f->pod);
}

static tpu_status_t run_mesh(fixture_t *f, scenario_t sc, uint64_t vmem_bytes,
                             const tpu_mesh_t *mesh)
{
    static const char *const sems[] = {"send", "recv", "other"};
    tpu_rdma_buf_t bufs[4];
    tpu_rdma_kernel_t k;
    test_run_t t = {sc, mesh, NULL};

    bufs[IN] = (tpu_rdma_buf_t){"in", TPU_RDMA_HBM, NB, (void *const *)f->in};
    bufs[OUT] = (tpu_rdma_buf_t){"out", TPU_RDMA_HBM, NB, (void *const *)f->out};
    bufs[SMALL] = (tpu_rdma_buf_t){"small", TPU_RDMA_HBM, NB / 2, NULL};
    bufs[VBUF] = (tpu_rdma_buf_t){"vbuf", TPU_RDMA_VMEM, vmem_bytes, NULL};
    k = (tpu_rdma_kernel_t){"test_kernel", 4, bufs, 3, sems, body, &t};
    tpu_err_clear(&f->err);
    return tpu_rdma_run(f->rdma, &k, &(tpu_rdma_opts_t){.timeout_s = 5.0}, &f->stats, &f->err);
}

static tpu_status_t run(fixture_t *f, scenario_t sc, uint64_t vmem_bytes)
{
    return run_mesh(f, sc, vmem_bytes, NULL);
}

static void expect_us(double got_us, double want_s)
{
    assert_true(fabs(got_us - want_s * 1e6) <= 1e-9 * want_s * 1e6);
}

static void test_pairs(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_PAIRS, NB), TPU_OK);
    assert_memory_equal(f.out[1], f.in[0], NB);
    assert_memory_equal(f.out[3], f.in[2], NB);
    assert_memory_equal(f.out[2], f.in[3], NB);
    /* One hop each: issue + alpha + 4096 / 4.5e10. */
    expect_us(f.stats.modeled_us, ISSUE + ALPHA + NB / BW);
    assert_int_equal(f.stats.copies, 3);
    close_pod(&f);
}

static void test_gather_counts(void **state)
{
    fixture_t f;
    int c;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_GATHER, NB), TPU_OK);
    for (c = 1; c < 4; c++) {
        assert_memory_equal(f.out[0] + c * (NB / 4), f.in[c], NB / 4);
    }
    /* Chip 2 is two hops from chip 0 on the ring of 4: the last arrival. */
    expect_us(f.stats.modeled_us, ISSUE + 2 * ALPHA + (NB / 4) / BW);
    close_pod(&f);
}

static void test_same_link_shares(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_SAME_LINK, NB), TPU_OK);
    assert_memory_equal(f.out[1], f.in[0], NB);
    /* The second copy's start waits for the first's on chip 0's DMA engine of link x+
     * (MSG, the link model's msg_cost, 50 ns); the first's bytes (2 KiB, 46 ns) have left the
     * link by then. */
    expect_us(f.stats.modeled_us, ISSUE + MSG + ALPHA + (NB / 2) / BW);
    close_pod(&f);
}

static void test_compute_then_copy(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_COMPUTE, NB), TPU_OK);
    expect_us(f.stats.modeled_us, 5e-6 + ISSUE + ALPHA + NB / BW);
    expect_us(f.stats.compute_us, 5e-6);
    close_pod(&f);
}

static void test_axis_offsets_2d(void **state)
{
    fixture_t f;
    int x;

    (void)state;
    open_pod(&f, "4x4");
    assert_int_equal(run(&f, SC_AXIS, NB), TPU_OK);
    for (x = 0; x < 16; x++) {
        int c[TPU_MAX_AXES], cx[TPU_MAX_AXES], cy[TPU_MAX_AXES];
        const tpu_topo_t *topo = tpu_pod_topo(f.pod);

        tpu_topo_coords(topo, x, c);
        memcpy(cx, c, sizeof(c));
        memcpy(cy, c, sizeof(c));
        cx[0] = (c[0] + 3) % 4; /* the chip whose x+1 is this one */
        cy[1] = (c[1] + 1) % 4; /* the chip whose y-1 is this one */
        assert_memory_equal(f.out[x], f.in[tpu_topo_chip(topo, 0, cx)], NB / 2);
        assert_memory_equal(f.out[x] + NB / 2, f.in[tpu_topo_chip(topo, 0, cy)] + NB / 2, NB / 2);
    }
    /* Two copies on different links, each one hop: they do not wait for each other. */
    expect_us(f.stats.modeled_us, ISSUE + ALPHA + (NB / 2) / BW);
    close_pod(&f);
}

static void test_mesh_axis_peer(void **state)
{
    fixture_t f;
    tpu_mesh_t *mesh;
    int chip, co[TPU_MESH_MAX_AXES];

    (void)state;
    open_pod(&f, "4x4");
    assert_int_equal(tpu_mesh_create(tpu_pod_topo(f.pod), "data=4,model=4", NULL, 0, &mesh, &f.err),
                     TPU_OK);
    assert_int_equal(run_mesh(&f, SC_MESH, NB, mesh), TPU_OK);
    for (chip = 0; chip < 16; chip++) {
        tpu_mesh_coords(mesh, chip, co);
        co[1] = (co[1] + 3) % 4; /* the chip whose model+1 is this one */
        assert_memory_equal(f.out[chip], f.in[tpu_mesh_chip_at(mesh, co)], NB);
    }
    tpu_mesh_destroy(mesh);
    close_pod(&f);
}

static void test_self_copy(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_SELF, NB), TPU_OK);
    assert_memory_equal(f.out[2], f.in[2], NB);
    /* HBM -> HBM: read and write 4096 bytes at v5e's 8.1e11 B/s. */
    expect_us(f.stats.modeled_us, ISSUE + 2.0 * NB / 8.1e11);
    close_pod(&f);
}

static void expect_error(fixture_t *f, tpu_status_t want, const char *a, const char *b)
{
    if (strstr(f->err.msg, a) == NULL || (b != NULL && strstr(f->err.msg, b) == NULL)) {
        fail_msg("message '%s' lacks '%s' / '%s'", f->err.msg, a, b ? b : "");
    }
    assert_int_equal(f->err.status, want);
}

static void test_deadlock_named(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_DEADLOCK, NB), TPU_ERR_TIMEOUT);
    expect_error(&f, TPU_ERR_TIMEOUT, "chip 1 waits on semaphore 'recv'", "deadlock");
    /* The runtime is usable again after a failed kernel. */
    assert_int_equal(run(&f, SC_PAIRS, NB), TPU_OK);
    close_pod(&f);
}

/* A chip that waits tells the on_wait hook whom it waits for (a watchdog's
 * heartbeat), in a semaphore wait and at the end of the kernel. */
static void test_on_wait_called(void **state)
{
    static const char *const sems[] = {"send", "recv", "other"};
    waits_t w;
    test_run_t t = {SC_ON_WAIT, NULL, &w};
    tpu_rdma_buf_t bufs[2];
    tpu_rdma_kernel_t k;
    tpu_rdma_opts_t opts = {30.0, on_wait, &w};
    fixture_t f;

    (void)state;
    atomic_init(&w.any, 0);
    atomic_init(&w.chip0, 0);
    open_pod(&f, "4");
    bufs[IN] = (tpu_rdma_buf_t){"in", TPU_RDMA_HBM, NB, (void *const *)f.in};
    bufs[OUT] = (tpu_rdma_buf_t){"out", TPU_RDMA_HBM, NB, (void *const *)f.out};
    k = (tpu_rdma_kernel_t){"test_kernel", 2, bufs, 3, sems, body, &t};
    assert_int_equal(tpu_rdma_run(f.rdma, &k, &opts, &f.stats, &f.err), TPU_OK);
    assert_true(atomic_load(&w.any) > 0);
    assert_true(atomic_load(&w.chip0) > 0);
    assert_memory_equal(f.out[1], f.in[0], NB);
    /* The wall-clock wait costs no modeled time: one hop, as test_pairs. */
    expect_us(f.stats.modeled_us, ISSUE + ALPHA + NB / BW);
    close_pod(&f);
}

static void test_too_small(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_TOO_SMALL, NB), TPU_ERR_INVALID);
    expect_error(&f, TPU_ERR_INVALID, "chip 0", "does not fit buffer 'small' (2048 bytes)");
    close_pod(&f);
}

static void test_bad_device(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_BAD_DEVICE, NB), TPU_ERR_INVALID);
    expect_error(&f, TPU_ERR_INVALID, "chip 3", "device id 7 is outside the pod of 4 chips");
    close_pod(&f);
}

static void test_race_detected(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_RACE, NB), TPU_ERR_INVALID);
    expect_error(&f, TPU_ERR_INVALID, "race in buffer 'out'", "chip 0");
    close_pod(&f);
}

static void test_in_flight_at_end(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_IN_FLIGHT, NB), TPU_ERR_INVALID);
    expect_error(&f, TPU_ERR_INVALID, "chip 0: the kernel ended with copies in flight",
                 "semaphore 'send'");
    close_pod(&f);
}

static void test_body_error_stops_all(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_BODY_ERROR, NB), TPU_ERR_INVALID);
    expect_error(&f, TPU_ERR_INVALID, "chip 2", "the body of chip 2 gave up");
    close_pod(&f);
}

static void test_vmem_capacity(void **state)
{
    fixture_t f;

    (void)state;
    open_pod(&f, "4");
    assert_int_equal(run(&f, SC_PAIRS, (uint64_t)200 << 20), TPU_ERR_RESOURCE_EXHAUSTED);
    expect_error(&f, TPU_ERR_RESOURCE_EXHAUSTED, "VMEM buffers need", "capacity 128.0 MiB");
    close_pod(&f);
}

static void test_same_time_every_run(void **state)
{
    fixture_t f;
    double first;
    int i;

    (void)state;
    open_pod(&f, "4x4");
    assert_int_equal(run(&f, SC_AXIS, NB), TPU_OK);
    first = f.stats.modeled_us;
    for (i = 0; i < 5; i++) {
        assert_int_equal(run(&f, SC_AXIS, NB), TPU_OK);
        assert_true(f.stats.modeled_us == first);
    }
    close_pod(&f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_gather_counts),
        cmocka_unit_test(test_same_link_shares),
        cmocka_unit_test(test_compute_then_copy),
        cmocka_unit_test(test_axis_offsets_2d),
        cmocka_unit_test(test_mesh_axis_peer),
        cmocka_unit_test(test_self_copy),
        cmocka_unit_test(test_deadlock_named),
        cmocka_unit_test(test_on_wait_called),
        cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_bad_device),
        cmocka_unit_test(test_race_detected),
        cmocka_unit_test(test_in_flight_at_end),
        cmocka_unit_test(test_body_error_stops_all),
        cmocka_unit_test(test_vmem_capacity),
        cmocka_unit_test(test_same_time_every_run),
    };

    return tpu_test_main(argc, argv, "rdma", tests, sizeof tests / sizeof tests[0]);
}
