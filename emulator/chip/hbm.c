/*
 * The HBM allocator of one chip: capacity accounting over lazily taken host
 * memory.
 *
 * Every allocation is one tpu__calloc() of a 64-byte header plus the bytes
 * asked for.  The headers form a doubly linked list, so tpu_hbm_free() finds the
 * size of a block from its pointer and tpu_hbm_destroy() frees whatever is
 * still live.  The capacity is checked before any host memory is taken, so a
 * request past the chip's HBM fails with RESOURCE_EXHAUSTED however large it
 * is.  glibc serves large callocs with fresh mmap()ed pages that stay
 * untouched (and cost nothing) until written.
 *
 *   host block:  [ header (64 B): prev, next, bytes, tag | data (bytes) ... ]
 *                                                         ^ pointer returned
 */
#include "tpu/hbm.h"

#include "alloc.h"
#include "chip_internal.h"

#include <stdint.h>
#include <string.h>

#define HBM_TAG 0x48424d2d43484950ull /* "HBM-CHIP" */

typedef union hbm_header {
    struct {
        union hbm_header *prev;
        union hbm_header *next;
        const tpu_hbm_t *owner;
        uint64_t bytes;
        uint64_t tag;
    } h;
    unsigned char pad[64]; /* keeps the data 64 bytes past a 16-aligned block */
} hbm_header_t;

struct tpu_hbm {
    char chip[TPU_CHIP_NAME_LEN];
    uint64_t capacity;
    uint64_t in_use;   /* allocations + reservations */
    uint64_t reserved; /* reservations alone */
    uint64_t peak;
    uint64_t host_bytes;
    int64_t count;
    hbm_header_t *head;
};

tpu_status_t tpu_hbm_create(const tpu_chip_spec_t *spec, tpu_hbm_t **hbm_p, tpu_err_t *err)
{
    tpu_hbm_t *hbm;

    if (spec == NULL || hbm_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_hbm_create: NULL argument");
    }
    if (!(spec->hbm_bytes >= 1) || spec->hbm_bytes > 0x1p63) {
        return tpu_err_set(err, TPU_ERR_INVALID, "HBM of chip %s: capacity %g bytes is not valid",
                           spec->name, spec->hbm_bytes);
    }
    hbm = tpu__calloc(1, sizeof(*hbm));
    if (hbm == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "HBM of chip %s: no host memory for its state",
                           spec->name);
    }
    memcpy(hbm->chip, spec->name, sizeof(hbm->chip));
    hbm->chip[sizeof(hbm->chip) - 1] = '\0';
    hbm->capacity = (uint64_t)spec->hbm_bytes;
    *hbm_p = hbm;
    return TPU_OK;
}

void tpu_hbm_destroy(tpu_hbm_t *hbm)
{
    hbm_header_t *hdr;
    hbm_header_t *next;

    if (hbm == NULL) {
        return;
    }
    for (hdr = hbm->head; hdr != NULL; hdr = next) {
        next = hdr->h.next;
        hdr->h.tag = 0;
        tpu__free(hdr);
    }
    tpu__free(hbm);
}

/* Check that 'bytes' more fit; write the XLA-style message if not. */
static tpu_status_t check_capacity(const tpu_hbm_t *hbm, uint64_t bytes, tpu_err_t *err)
{
    char req[32];
    char used[32];
    char cap[32];

    if (bytes <= hbm->capacity - hbm->in_use) {
        return TPU_OK;
    }
    tpu__fmt_bytes((double)bytes, 2, req, sizeof(req));
    tpu__fmt_bytes((double)hbm->in_use, 2, used, sizeof(used));
    tpu__fmt_bytes((double)hbm->capacity, 2, cap, sizeof(cap));
    return tpu_err_set(err, TPU_ERR_RESOURCE_EXHAUSTED,
                       "RESOURCE_EXHAUSTED: HBM of chip %s: requested %s, in use %s, capacity %s",
                       hbm->chip, req, used, cap);
}

static void account(tpu_hbm_t *hbm, uint64_t bytes)
{
    hbm->in_use += bytes;
    if (hbm->in_use > hbm->peak) {
        hbm->peak = hbm->in_use;
    }
}

tpu_status_t tpu_hbm_alloc(tpu_hbm_t *hbm, uint64_t bytes, void **ptr_p, tpu_err_t *err)
{
    tpu_status_t status;
    hbm_header_t *hdr;
    char req[32];

    if (hbm == NULL || ptr_p == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_hbm_alloc: NULL argument");
    }
    status = check_capacity(hbm, bytes, err);
    if (status != TPU_OK) {
        return status;
    }
    if (bytes > SIZE_MAX - sizeof(hbm_header_t)) {
        tpu__fmt_bytes((double)bytes, 2, req, sizeof(req));
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "HBM of chip %s: the host cannot address %s",
                           hbm->chip, req);
    }
    hdr = tpu__calloc(1, sizeof(hbm_header_t) + (size_t)bytes);
    if (hdr == NULL) {
        tpu__fmt_bytes((double)bytes, 2, req, sizeof(req));
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "HBM of chip %s: no host memory to back %s",
                           hbm->chip, req);
    }
    hdr->h.owner = hbm;
    hdr->h.bytes = bytes;
    hdr->h.tag = HBM_TAG;
    hdr->h.next = hbm->head;
    if (hbm->head != NULL) {
        hbm->head->h.prev = hdr;
    }
    hbm->head = hdr;
    hbm->count++;
    hbm->host_bytes += bytes;
    account(hbm, bytes);
    *ptr_p = hdr + 1;
    return TPU_OK;
}

void tpu_hbm_free(tpu_hbm_t *hbm, void *ptr)
{
    hbm_header_t *hdr;

    if (hbm == NULL || ptr == NULL) {
        return;
    }
    hdr = (hbm_header_t *)ptr - 1;
    if (hdr->h.tag != HBM_TAG || hdr->h.owner != hbm) {
        return; /* not ours: undefined behaviour by contract, ignored when detectable */
    }
    if (hdr->h.prev != NULL) {
        hdr->h.prev->h.next = hdr->h.next;
    } else {
        hbm->head = hdr->h.next;
    }
    if (hdr->h.next != NULL) {
        hdr->h.next->h.prev = hdr->h.prev;
    }
    hbm->in_use -= hdr->h.bytes;
    hbm->host_bytes -= hdr->h.bytes;
    hbm->count--;
    hdr->h.tag = 0;
    tpu__free(hdr);
}

tpu_status_t tpu_hbm_reserve(tpu_hbm_t *hbm, uint64_t bytes, tpu_err_t *err)
{
    tpu_status_t status;

    if (hbm == NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID, "tpu_hbm_reserve: NULL argument");
    }
    status = check_capacity(hbm, bytes, err);
    if (status != TPU_OK) {
        return status;
    }
    hbm->reserved += bytes;
    account(hbm, bytes);
    return TPU_OK;
}

void tpu_hbm_unreserve(tpu_hbm_t *hbm, uint64_t bytes)
{
    if (hbm == NULL) {
        return;
    }
    if (bytes > hbm->reserved) {
        bytes = hbm->reserved;
    }
    hbm->reserved -= bytes;
    hbm->in_use -= bytes;
}

uint64_t tpu_hbm_in_use(const tpu_hbm_t *hbm)
{
    return hbm != NULL ? hbm->in_use : 0;
}

uint64_t tpu_hbm_peak(const tpu_hbm_t *hbm)
{
    return hbm != NULL ? hbm->peak : 0;
}

uint64_t tpu_hbm_capacity(const tpu_hbm_t *hbm)
{
    return hbm != NULL ? hbm->capacity : 0;
}

uint64_t tpu_hbm_host_bytes(const tpu_hbm_t *hbm)
{
    return hbm != NULL ? hbm->host_bytes : 0;
}

int64_t tpu_hbm_count(const tpu_hbm_t *hbm)
{
    return hbm != NULL ? hbm->count : 0;
}
