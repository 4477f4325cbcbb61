/*
 * tpuemu: a TPU pod on an MPI cluster.  The program is app_main() (cli.c).
 *
 * Large blocks on huge pages.  The model's schedules are arrays of tens of
 * megabytes (an open 16x20x28 psum builds about 40 MB of flows), written once
 * each and soon freed; on 4 KiB pages every first write is a page fault, and on
 * a virtual machine the faults cost more than the writes (37,000 faults, about
 * half the CPU time of such a psum).  The program's allocator asks the kernel
 * for transparent huge pages on blocks of 4 MiB and more (madvise; Linux only,
 * a hint the kernel may ignore): 15,000 faults instead of 37,000 there.  The
 * advice covers the block's every page, so its mapping stays one region with one
 * set of flags and realloc() can grow it in place (mremap refuses a range that
 * advice on a part of it has split: glibc then copies the block to new pages;
 * a tree all-gather of 16x20x28: 8,900 faults, 15,500 with the advice on the
 * block's inner huge pages only).  The library allocates through this hook
 * (tpu/alloc.h); small blocks are plain malloc.  At exit,
 * stdout is flushed and closed, and a write error there fails the run (exit 3).
 */
#ifdef __linux__
#define _DEFAULT_SOURCE /* madvise() and MADV_HUGEPAGE */
#endif
#include "tpu/alloc.h"

#include "cli.h"
#include "jobenv.h"
#include "launch.h"
#include "sink.h"

#include <stdint.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Blocks from this size on are advised onto huge pages. */
#define HUGE_BLOCK ((size_t)4 << 20)

#ifdef __linux__
/* The kernel's base page (4 KiB; 16 or 64 KiB on some arm64 kernels), set before the hook. */
static uintptr_t page = 4096;
#endif

static void *advise_huge(void *p, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p != NULL && size >= HUGE_BLOCK) {
        uintptr_t a = (uintptr_t)p & ~(page - 1);
        uintptr_t b = ((uintptr_t)p + size + page - 1) & ~(page - 1);

        (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
    }
#else
    (void)size;
#endif
    return p;
}

static void *huge_malloc(size_t size)
{
    return advise_huge(malloc(size), size);
}

static void *huge_realloc(void *p, size_t size)
{
    return advise_huge(realloc(p, size), size);
}

static void *huge_calloc(size_t count, size_t size)
{
    /* calloc() has checked count * size for overflow when it succeeds. */
    void *p = calloc(count, size);

    return p != NULL ? advise_huge(p, count * size) : NULL;
}

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    int code;

#ifdef __linux__
    {
        const long n = sysconf(_SC_PAGESIZE);

        page = n > 0 ? (uintptr_t)n : page;
    }
#endif
    (void)tpu_alloc_set(huge_malloc, huge_realloc, huge_calloc, free);
    code = app_main(argc, argv);
    /* Text on stdout that could not be written (a full disk, a closed pipe) is an error. */
    if (app_sink_close_stdout(&err) != TPU_OK) {
        app_die_msg(err.msg);
        if (code == APP_EXIT_OK) {
            code = APP_EXIT_OUTPUT;
        }
    }
    /* One exit code per class: an output that could not be written is 3 wherever the
     * command found it (docs/errors.md). */
    if (code == APP_EXIT_FAIL && app_sink_output_failed()) {
        code = APP_EXIT_OUTPUT;
    }
    return code;
}
