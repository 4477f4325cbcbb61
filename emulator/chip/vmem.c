/*
 * The VMEM kernel executor: Pallas' grid / BlockSpec / body model on a real VMEM
 * buffer, with the double-buffered HBM <-> VMEM pipeline in the time model.
 *
 * Layout of the VMEM buffer for a kernel with inputs x, y and output o (every
 * buffer rounded up to 64 bytes):
 *
 *   [ x slot 0 | x slot 1 | y slot 0 | y slot 1 | o slot 0 | o slot 1 | scratch ]
 *
 * The grid is walked in row-major order.  For step s (indices g) the executor
 * knows the block indices of every operand at s and at s+1 (index maps are pure
 * functions), so it can tell the body which output block is on its last step.
 * Per step, on the host, one after the other:
 *
 *   1. body(s) on the current slots
 *   2. fetch the inputs whose index changes at s+1 into the other slot ("DMA
 *      in" of the next step; an unchanged index keeps its slot: no fetch)
 *   3. write back the outputs whose index changes at s+1 (or s is the last
 *      step) from the current slot, and switch those outputs to the other slot
 *
 * On the chip, 2 and 3 run while the body computes, so the model charges each
 * step max(compute(s), (in(s+1) + out(s-1)) / bw): the inputs for the next
 * step and the write-back of the previous step's finished blocks share the HBM
 * bandwidth and overlap the body.  The first fetch (prologue) and the last
 * write-back (epilogue) are exposed.  Time is accumulated in seconds and
 * reported in microseconds.
 *
 * Example, a matmul grid (i, j, k) = (2, 1, 2), blocks A(i,k), B(k,j), C(i,j):
 *
 *   step  grid     fetch for next       write back    body sees
 *   pro   -        A00 B00              -             -
 *   0     (0,0,0)  A01 B10              -             C00 first
 *   1     (0,0,1)  A10 B00              C00           C00 last
 *   2     (1,0,0)  A11 B10              -             C10 first
 *   3     (1,0,1)  -                    C10 (epi)     C10 last
 */
#include "tpu/vmem.h"

#include "alloc.h"
#include "chip_internal.h"

#include <stdio.h>
#include <string.h>

#define SLOT_ALIGN 64

/* The largest block a plan may describe: 2^48 bytes, well past any VMEM. */
#define MAX_BLOCK_BYTES ((double)((uint64_t)1 << 48))
/* The most grid steps a kernel may have. */
#define MAX_STEPS ((int64_t)1 << 40)

struct tpu_vmem {
    tpu_chip_spec_t spec;
    uint64_t capacity;  /* one TensorCore's share */
    void *buf_raw;      /* the allocation */
    unsigned char *buf; /* the VMEM buffer: buf_raw aligned to SLOT_ALIGN */
    size_t buf_bytes;
    void *host_raw; /* host-side work space of the ops (not VMEM) */
    void *host;     /* host_raw aligned to SLOT_ALIGN */
    size_t host_bytes;
};

/* 'p' rounded up to a multiple of SLOT_ALIGN. */
static void *align_up(void *p)
{
    return (void *)(((uintptr_t)p + SLOT_ALIGN - 1) & ~(uintptr_t)(SLOT_ALIGN - 1));
}

typedef struct op_state {
    const tpu_vmem_operand_t *op;
    int is_out;
    size_t slot_bytes;
    unsigned char *slot[2];
    int cur;
    int64_t nblocks[TPU_VMEM_MAX_RANK];
    int64_t idx[TPU_VMEM_MAX_RANK];
    int64_t next[TPU_VMEM_MAX_RANK];
    int changes; /* the index at s+1 differs from the one at s */
    uint64_t version;
} op_state_t;

tpu_status_t tpu_vmem_create(const tpu_chip_spec_t *spec, tpu_vmem_t **vmem_p, tpu_err_t *err)
{
    tpu_vmem_t *vmem;

    if (spec == NULL || vmem_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_vmem_create: NULL argument");
    }
    if (!(spec->vmem_bytes >= 1) || !(spec->hbm_bw > 0) || spec->tensorcores < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "VMEM of chip %s: vmem_bytes, hbm_bw and tensorcores must be positive",
                           spec->name);
    }
    vmem = tpu__calloc(1, sizeof(*vmem));
    if (vmem == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "VMEM of chip %s: no host memory for its state",
                           spec->name);
    }
    vmem->spec = *spec;
    vmem->capacity = (uint64_t)(spec->vmem_bytes / spec->tensorcores);
    *vmem_p = vmem;
    return TPU_OK;
}

void tpu_vmem_destroy(tpu_vmem_t *vmem)
{
    if (vmem == NULL) {
        return;
    }
    tpu__free(vmem->host_raw);
    tpu__free(vmem->buf_raw);
    tpu__free(vmem);
}

void *tpu__vmem_host_scratch(tpu_vmem_t *vmem, size_t bytes)
{
    void *p;

    if (vmem->host != NULL && vmem->host_bytes >= bytes) {
        return vmem->host;
    }
    if (bytes > SIZE_MAX - SLOT_ALIGN) {
        return NULL;
    }
    p = tpu__malloc(bytes + SLOT_ALIGN);
    if (p == NULL) {
        return NULL;
    }
    tpu__free(vmem->host_raw);
    vmem->host_raw = p;
    vmem->host = align_up(p);
    vmem->host_bytes = bytes;
    return vmem->host;
}

const tpu_chip_spec_t *tpu_vmem_spec(const tpu_vmem_t *vmem)
{
    return &vmem->spec;
}

uint64_t tpu_vmem_capacity(const tpu_vmem_t *vmem)
{
    return vmem->capacity;
}

uint64_t tpu_vmem_host_bytes(const tpu_vmem_t *vmem)
{
    return vmem->buf_bytes;
}

static const char *kname(const tpu_vmem_kernel_t *kernel)
{
    return kernel->name != NULL ? kernel->name : "kernel";
}

static const tpu_vmem_operand_t *operand_at(const tpu_vmem_kernel_t *kernel, int i, int *is_out_p,
                                            int *num_p)
{
    if (i < kernel->n_in) {
        *is_out_p = 0;
        *num_p = i;
        return &kernel->in[i];
    }
    *is_out_p = 1;
    *num_p = i - kernel->n_in;
    return &kernel->out[i - kernel->n_in];
}

static uint64_t round_slot(double bytes)
{
    return ((uint64_t)bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
}

/* Check one operand; return its block bytes in '*bytes_p'. */
static tpu_status_t check_operand(const tpu_vmem_kernel_t *kernel, const tpu_vmem_operand_t *op,
                                  int is_out, int num, double *bytes_p, tpu_err_t *err)
{
    const char *what = is_out ? "output" : "input";
    double bytes;
    int d;

    if (op->rank < 1 || op->rank > TPU_VMEM_MAX_RANK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s %d has rank %d (1 to %d)", kname(kernel),
                           what, num, op->rank, TPU_VMEM_MAX_RANK);
    }
    if (op->elem_size < 1) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s %d has element size 0", kname(kernel),
                           what, num);
    }
    bytes = (double)op->elem_size;
    for (d = 0; d < op->rank; d++) {
        if (op->shape[d] < 1 || op->block[d] < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "%s: %s %d dimension %d: shape %lld and block %lld must be >= 1",
                               kname(kernel), what, num, d, (long long)op->shape[d],
                               (long long)op->block[d]);
        }
        if (op->shape[d] > ((int64_t)1 << 56) || op->block[d] > ((int64_t)1 << 56)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s %d dimension %d is too large",
                               kname(kernel), what, num, d);
        }
        bytes *= (double)op->block[d];
    }
    if (bytes > MAX_BLOCK_BYTES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s %d block of %.3g bytes is too large",
                           kname(kernel), what, num, bytes);
    }
    *bytes_p = bytes;
    return TPU_OK;
}

/* Check the kernel; return the plan's bytes, its block count and block bytes. */
static tpu_status_t check_kernel(const tpu_vmem_kernel_t *kernel, int model_only, uint64_t *plan_p,
                                 double *blocks_bytes_p, int64_t *steps_p, tpu_err_t *err)
{
    tpu_status_t status;
    const tpu_vmem_operand_t *op;
    uint64_t plan = 0;
    double blocks = 0;
    double bytes = 0;
    int64_t steps = 1;
    int is_out;
    int num;
    int i;

    if (kernel == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_vmem_run: NULL kernel");
    }
    if (kernel->grid_rank < 1 || kernel->grid_rank > TPU_VMEM_MAX_GRID) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: grid has %d dimensions (1 to %d)",
                           kname(kernel), kernel->grid_rank, TPU_VMEM_MAX_GRID);
    }
    for (i = 0; i < kernel->grid_rank; i++) {
        if (kernel->grid[i] < 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: grid dimension %d is %lld (must be >= 1)",
                               kname(kernel), i, (long long)kernel->grid[i]);
        }
        if (kernel->grid[i] > MAX_STEPS / steps) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: grid has more than 2^40 steps",
                               kname(kernel));
        }
        steps *= kernel->grid[i];
    }
    if (kernel->n_in < 0 || kernel->n_out < 0 || kernel->n_in + kernel->n_out < 1 ||
        kernel->n_in + kernel->n_out > TPU_VMEM_MAX_OPERANDS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: %d inputs and %d outputs (1 to %d in all)",
                           kname(kernel), kernel->n_in, kernel->n_out, TPU_VMEM_MAX_OPERANDS);
    }
    if ((kernel->n_in > 0 && kernel->in == NULL) || (kernel->n_out > 0 && kernel->out == NULL) ||
        kernel->body == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: NULL operand list or body", kname(kernel));
    }
    for (i = 0; i < kernel->n_in + kernel->n_out; i++) {
        op = operand_at(kernel, i, &is_out, &num);
        status = check_operand(kernel, op, is_out, num, &bytes, err);
        if (status != TPU_OK) {
            return status;
        }
        if (!model_only && op->data == NULL) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: %s %d has no data", kname(kernel),
                               is_out ? "output" : "input", num);
        }
        blocks += bytes;
        plan += 2 * round_slot(bytes);
    }
    if ((double)kernel->scratch_bytes > MAX_BLOCK_BYTES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: scratch of %zu bytes is too large",
                           kname(kernel), kernel->scratch_bytes);
    }
    plan += round_slot((double)kernel->scratch_bytes);
    *plan_p = plan;
    *blocks_bytes_p = blocks;
    *steps_p = steps;
    return TPU_OK;
}

tpu_status_t tpu_vmem_plan_bytes(const tpu_vmem_kernel_t *kernel, uint64_t *bytes_p, tpu_err_t *err)
{
    tpu_status_t status;
    uint64_t plan;
    double blocks;
    int64_t steps;

    if (bytes_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_vmem_plan_bytes: NULL argument");
    }
    status = check_kernel(kernel, 1, &plan, &blocks, &steps, err);
    if (status == TPU_OK) {
        *bytes_p = plan;
    }
    return status;
}

/* VMEM sizes are given in MiB, one decimal, whatever their size. */
static void fmt_mib(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f MiB", bytes / (1024.0 * 1024.0));
}

static tpu_status_t plan_too_big(const tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel,
                                 uint64_t plan, tpu_err_t *err)
{
    char need[32];
    char cap[32];
    char scratch[48] = "";
    char cores[48] = "";
    char sbytes[32];

    fmt_mib((double)plan, need, sizeof(need));
    fmt_mib((double)vmem->capacity, cap, sizeof(cap));
    if (kernel->scratch_bytes > 0) {
        fmt_mib((double)kernel->scratch_bytes, sbytes, sizeof(sbytes));
        snprintf(scratch, sizeof(scratch), " + %s scratch", sbytes);
    }
    if (vmem->spec.tensorcores > 1) {
        snprintf(cores, sizeof(cores), " (one of %d TensorCores)", vmem->spec.tensorcores);
    }
    return tpu_err_set(err, TPU_ERR_RESOURCE_EXHAUSTED,
                       "%s on chip %s: VMEM plan needs %s (2 x %d blocks%s), capacity %s%s",
                       kname(kernel), vmem->spec.name, need, kernel->n_in + kernel->n_out, scratch,
                       cap, cores);
}

/* The grid indices of step 's' (row-major, last dimension fastest). */
static void grid_indices(const tpu_vmem_kernel_t *kernel, int64_t s, int64_t *g)
{
    int d;

    for (d = kernel->grid_rank - 1; d >= 0; d--) {
        g[d] = s % kernel->grid[d];
        s /= kernel->grid[d];
    }
}

/* Write "(a, b, c)" of the 'n' values 'v' into 'buf'. */
static void fmt_tuple(const int64_t *v, int n, char *buf, size_t len)
{
    size_t off = 0;
    int d;

    off += (size_t)snprintf(buf, len, "(");
    for (d = 0; d < n && off < len; d++) {
        off += (size_t)snprintf(buf + off, len - off, "%s%lld", d ? ", " : "", (long long)v[d]);
    }
    if (off < len) {
        snprintf(buf + off, len - off, ")");
    }
}

/* Map grid indices 'g' to the block indices of 'st' into 'out', and check them. */
static tpu_status_t map_indices(const tpu_vmem_kernel_t *kernel, const op_state_t *st, int num,
                                const int64_t *g, int64_t *out, tpu_err_t *err)
{
    const tpu_vmem_operand_t *op = st->op;
    char blk[128];
    char grid[96];
    char nbl[128];
    int d;

    memset(out, 0, sizeof(int64_t) * TPU_VMEM_MAX_RANK);
    if (op->index_map != NULL) {
        op->index_map(g, out, op->index_map_arg);
    } else {
        for (d = 0; d < op->rank && d < kernel->grid_rank; d++) {
            out[d] = g[d];
        }
    }
    for (d = 0; d < op->rank; d++) {
        if (out[d] < 0 || out[d] >= st->nblocks[d]) {
            break;
        }
    }
    if (d == op->rank) {
        return TPU_OK;
    }
    fmt_tuple(out, op->rank, blk, sizeof(blk));
    fmt_tuple(g, kernel->grid_rank, grid, sizeof(grid));
    fmt_tuple(st->nblocks, op->rank, nbl, sizeof(nbl));
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "%s: the index map of %s %d returned block %s at grid step %s, outside "
                       "its array of %s blocks",
                       kname(kernel), st->is_out ? "output" : "input", num, blk, grid, nbl);
}

/* The in-array extent of the block at 'idx' along each dimension. */
static void valid_extent(const tpu_vmem_operand_t *op, const int64_t *idx, int64_t *valid)
{
    int64_t left;
    int d;

    for (d = 0; d < TPU_VMEM_MAX_RANK; d++) {
        valid[d] = 1;
    }
    for (d = 0; d < op->rank; d++) {
        left = op->shape[d] - idx[d] * op->block[d];
        valid[d] = left < op->block[d] ? left : op->block[d];
    }
}

static double valid_bytes(const tpu_vmem_operand_t *op, const int64_t *valid)
{
    double bytes = (double)op->elem_size;
    int d;

    for (d = 0; d < op->rank; d++) {
        bytes *= (double)valid[d];
    }
    return bytes;
}

/*
 * Copy the block at 'idx' of 'op' between its array and the VMEM slot 'vbuf'
 * ('to_vmem': HBM -> VMEM, zero-filling the part outside the array; else
 * VMEM -> HBM of the part inside only).  Row by row along the last dimension.
 */
static void dma_block(const tpu_vmem_operand_t *op, const int64_t *idx, const int64_t *valid,
                      unsigned char *vbuf, int to_vmem)
{
    const int r = op->rank;
    const size_t es = op->elem_size;
    int64_t astride[TPU_VMEM_MAX_RANK];
    int64_t bstride[TPU_VMEM_MAX_RANK];
    int64_t c[TPU_VMEM_MAX_RANK] = {0};
    int64_t base = 0;
    int64_t rows = 1;
    int64_t row;
    int64_t aoff;
    int64_t boff;
    size_t inner = (size_t)valid[r - 1] * es;
    size_t brow = (size_t)op->block[r - 1] * es;
    unsigned char *array = op->data;
    int contiguous = 1;
    int inside;
    int d;

    /* A block of whole rows (every dimension but the first complete) is one
     * contiguous range in the array and in VMEM: one copy. */
    for (d = 1; d < r; d++) {
        contiguous &= op->block[d] == op->shape[d];
    }
    if (contiguous) {
        size_t row_bytes = es;
        size_t bytes;

        for (d = 1; d < r; d++) {
            row_bytes *= (size_t)op->shape[d];
        }
        bytes = (size_t)valid[0] * row_bytes;
        if (to_vmem) {
            memcpy(vbuf, array + (size_t)(idx[0] * op->block[0]) * row_bytes, bytes);
            memset(vbuf + bytes, 0, (size_t)(op->block[0] - valid[0]) * row_bytes);
        } else {
            memcpy(array + (size_t)(idx[0] * op->block[0]) * row_bytes, vbuf, bytes);
        }
        return;
    }
    astride[r - 1] = 1;
    bstride[r - 1] = 1;
    for (d = r - 2; d >= 0; d--) {
        astride[d] = astride[d + 1] * op->shape[d + 1];
        bstride[d] = bstride[d + 1] * op->block[d + 1];
    }
    for (d = 0; d < r; d++) {
        base += idx[d] * op->block[d] * astride[d];
    }
    for (d = 0; d < r - 1; d++) {
        rows *= to_vmem ? op->block[d] : valid[d];
    }
    for (row = 0; row < rows; row++) {
        inside = 1;
        aoff = base;
        boff = 0;
        for (d = 0; d < r - 1; d++) {
            inside &= c[d] < valid[d];
            aoff += c[d] * astride[d];
            boff += c[d] * bstride[d];
        }
        if (to_vmem) {
            if (inside) {
                memcpy(vbuf + (size_t)boff * es, array + (size_t)aoff * es, inner);
                if (inner < brow) {
                    memset(vbuf + (size_t)boff * es + inner, 0, brow - inner);
                }
            } else {
                memset(vbuf + (size_t)boff * es, 0, brow);
            }
        } else {
            memcpy(array + (size_t)aoff * es, vbuf + (size_t)boff * es, inner);
        }
        /* Next row: increment the counters of dimensions r-2 .. 0. */
        for (d = r - 2; d >= 0; d--) {
            if (++c[d] < (to_vmem ? op->block[d] : valid[d])) {
                break;
            }
            c[d] = 0;
        }
    }
}

/* Point 'ref' at the current block of 'st'. */
static void fill_ref(const op_state_t *st, int model_only, tpu_vmem_ref_t *ref)
{
    const tpu_vmem_operand_t *op = st->op;
    int d;

    ref->data = model_only ? NULL : st->slot[st->cur];
    ref->elem_size = op->elem_size;
    ref->rank = op->rank;
    for (d = 0; d < TPU_VMEM_MAX_RANK; d++) {
        ref->block[d] = d < op->rank ? op->block[d] : 1;
        ref->index[d] = d < op->rank ? st->idx[d] : 0;
    }
    valid_extent(op, st->idx, ref->valid);
    ref->version = st->version;
}

static tpu_status_t ensure_buffer(tpu_vmem_t *vmem, uint64_t plan, tpu_err_t *err)
{
    void *raw;
    char need[32];

    if (vmem->buf_bytes >= plan && vmem->buf != NULL) {
        return TPU_OK;
    }
    raw = tpu__calloc(1, (size_t)plan + SLOT_ALIGN);
    if (raw == NULL) {
        tpu__fmt_bytes((double)plan, 1, need, sizeof(need));
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "VMEM of chip %s: no host memory for %s",
                           vmem->spec.name, need);
    }
    tpu__free(vmem->buf_raw);
    vmem->buf_raw = raw;
    vmem->buf = align_up(raw);
    vmem->buf_bytes = (size_t)plan;
    return TPU_OK;
}

static tpu_status_t run(tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel, int model_only,
                        tpu_vmem_stats_t *stats_p, tpu_err_t *err)
{
    tpu_status_t status;
    tpu_vmem_stats_t stats;
    tpu_vmem_step_t step;
    tpu_vmem_ref_t refs[TPU_VMEM_MAX_OPERANDS];
    op_state_t *st;
    const double bw = vmem->spec.hbm_bw;
    const double t0 = tpu__now_s();
    unsigned char *p;
    uint64_t plan;
    double blocks;
    double in_next;
    double out_now;
    double out_prev;
    double total_s;
    double dma_s;
    int64_t valid[TPU_VMEM_MAX_RANK];
    int64_t g[TPU_VMEM_MAX_GRID] = {0};
    int64_t gn[TPU_VMEM_MAX_GRID] = {0};
    int64_t steps;
    int64_t s;
    int nops;
    int is_out;
    int num;
    int i;
    int d;

    if (vmem == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_vmem_run: NULL vmem");
    }
    status = check_kernel(kernel, model_only, &plan, &blocks, &steps, err);
    if (status != TPU_OK) {
        goto out;
    }
    if (plan > vmem->capacity) {
        status = plan_too_big(vmem, kernel, plan, err);
        goto out;
    }
    nops = kernel->n_in + kernel->n_out;
    st = tpu__calloc((size_t)nops, sizeof(*st));
    if (st == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "%s: no host memory for the executor",
                             kname(kernel));
        goto out;
    }
    if (!model_only) {
        status = ensure_buffer(vmem, plan, err);
        if (status != TPU_OK) {
            goto out_free_state;
        }
    }

    /* Lay out the slots and map step 0. */
    memset(&stats, 0, sizeof(stats));
    p = vmem->buf;
    for (i = 0; i < nops; i++) {
        double bytes = 1;

        st[i].op = operand_at(kernel, i, &is_out, &num);
        st[i].is_out = is_out;
        for (d = 0; d < st[i].op->rank; d++) {
            st[i].nblocks[d] = tpu__cdiv(st[i].op->shape[d], st[i].op->block[d]);
            bytes *= (double)st[i].op->block[d];
        }
        st[i].slot_bytes = (size_t)round_slot(bytes * (double)st[i].op->elem_size);
        if (!model_only) {
            st[i].slot[0] = p;
            st[i].slot[1] = p + st[i].slot_bytes;
            p += 2 * st[i].slot_bytes;
        }
        status = map_indices(kernel, &st[i], num, g, st[i].idx, err);
        if (status != TPU_OK) {
            goto out_free_state;
        }
    }
    memset(&step, 0, sizeof(step));
    step.spec = &vmem->spec;
    step.grid_rank = kernel->grid_rank;
    memcpy(step.grid, kernel->grid, sizeof(step.grid));
    step.model_only = model_only;
    step.scratch = (!model_only && kernel->scratch_bytes > 0) ? p : NULL;
    step.scratch_bytes = kernel->scratch_bytes;
    stats.steps = steps;
    stats.vmem_bytes = (double)plan;

    /* Prologue: the first blocks of every input. */
    in_next = 0;
    for (i = 0; i < nops; i++) {
        st[i].version = 1;
        refs[i].first = 1;
        if (st[i].is_out) {
            continue;
        }
        valid_extent(st[i].op, st[i].idx, valid);
        if (!model_only) {
            dma_block(st[i].op, st[i].idx, valid, st[i].slot[0], 1);
        }
        in_next += valid_bytes(st[i].op, valid);
        stats.fetches++;
    }
    stats.bytes_in += in_next;
    stats.prologue_us = in_next / bw * 1e6;
    total_s = in_next / bw;
    out_prev = 0;

    for (s = 0; s < steps; s++) {
        /* Where every operand goes at s+1. */
        if (s + 1 < steps) {
            grid_indices(kernel, s + 1, gn);
        }
        for (i = 0; i < nops; i++) {
            st[i].changes = 1;
            if (s + 1 < steps) {
                operand_at(kernel, i, &is_out, &num);
                status = map_indices(kernel, &st[i], num, gn, st[i].next, err);
                if (status != TPU_OK) {
                    goto out_free_state;
                }
                st[i].changes = memcmp(st[i].next, st[i].idx, sizeof(st[i].idx)) != 0;
            }
            fill_ref(&st[i], model_only, &refs[i]);
            refs[i].last = st[i].is_out ? st[i].changes : 0;
        }

        /* The body on the current blocks. */
        memcpy(step.idx, g, sizeof(step.idx));
        step.step = s;
        step.flops = 0;
        step.compute_s = 0;
        status = kernel->body(&step, refs, kernel->body_arg, err);
        if (status != TPU_OK) {
            tpu_err_set(err, status, "%s: the body failed at step %lld", kname(kernel),
                        (long long)s);
            goto out_free_state;
        }
        stats.flops += step.flops;
        stats.compute_us += step.compute_s * 1e6;

        /* DMA in for s+1, write-back of what s finished. */
        in_next = 0;
        out_now = 0;
        for (i = 0; i < nops; i++) {
            refs[i].first = 0;
            if (!st[i].changes) {
                if (!st[i].is_out) {
                    stats.fetches_skipped++;
                }
                continue;
            }
            if (st[i].is_out) {
                valid_extent(st[i].op, st[i].idx, valid);
                if (!model_only) {
                    dma_block(st[i].op, st[i].idx, valid, st[i].slot[st[i].cur], 0);
                }
                out_now += valid_bytes(st[i].op, valid);
                stats.writebacks++;
                if (s + 1 < steps) {
                    st[i].cur ^= 1;
                    st[i].version++;
                    refs[i].first = 1;
                    memcpy(st[i].idx, st[i].next, sizeof(st[i].idx));
                }
                continue;
            }
            if (s + 1 < steps) {
                st[i].cur ^= 1;
                st[i].version++;
                refs[i].first = 1;
                memcpy(st[i].idx, st[i].next, sizeof(st[i].idx));
                valid_extent(st[i].op, st[i].idx, valid);
                if (!model_only) {
                    dma_block(st[i].op, st[i].idx, valid, st[i].slot[st[i].cur], 1);
                }
                in_next += valid_bytes(st[i].op, valid);
                stats.fetches++;
            }
        }
        stats.bytes_in += in_next;
        stats.bytes_out += out_now;
        dma_s = (in_next + out_prev) / bw;
        total_s += step.compute_s > dma_s ? step.compute_s : dma_s;
        out_prev = out_now;
        memcpy(g, gn, sizeof(g));
    }
    stats.epilogue_us = out_prev / bw * 1e6;
    total_s += out_prev / bw;
    stats.dma_us = (stats.bytes_in + stats.bytes_out) / bw * 1e6;
    stats.modeled_us = total_s * 1e6;
    stats.host_us = (tpu__now_s() - t0) * 1e6;
    if (stats_p != NULL) {
        *stats_p = stats;
    }
    status = TPU_OK;

out_free_state:
    tpu__free(st);
out:
    return status;
}

tpu_status_t tpu_vmem_run(tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel,
                          tpu_vmem_stats_t *stats_p, tpu_err_t *err)
{
    return run(vmem, kernel, 0, stats_p, err);
}

tpu_status_t tpu_vmem_model(tpu_vmem_t *vmem, const tpu_vmem_kernel_t *kernel,
                            tpu_vmem_stats_t *stats_p, tpu_err_t *err)
{
    return run(vmem, kernel, 1, stats_p, err);
}
