/*
 * Warnings for values that are valid but extreme (see extremes.h).  The ranges
 * come from the real chips, the presets of tpu/chip.h: a figure of the pod's chip
 * more than APP_EXTREME_FACTOR times the largest preset's, or below the smallest
 * preset's divided by it (latencies: above only, 0 is a documented choice; figures
 * whose 0 means "not modeled" or "the default": when not 0), and a pod of more
 * than APP_EXTREME_FACTOR times the chips of the largest real pod.  The model still
 * works there (the limits that break it are refused by the parser and
 * tpu_chip_check()), but its times describe no TPU: one line names the value and
 * the real figure it is compared with.  docs/limits.md has the table.
 */
#include "extremes.h"

#include "jobenv.h"

#include <stddef.h>
#include <stdio.h>

/* A figure of the chip spec, as the user gives it. */
typedef struct extreme_field {
    const char *name; /* what it is, and the flag or the config file's key that sets it */
    size_t offset;    /* in tpu_chip_spec_t, a double */
    const char *unit;
    double scale; /* shown as the value times this (seconds as microseconds) */
    int lower;    /* also warn below the smallest preset's figure */
} extreme_field_t;

static const extreme_field_t fields[] = {
    {"the HBM capacity (chip: hbm_bytes)", offsetof(tpu_chip_spec_t, hbm_bytes), "bytes", 1, 1},
    {"the HBM bandwidth (chip: hbm_bw)", offsetof(tpu_chip_spec_t, hbm_bw), "B/s", 1, 1},
    {"the bf16 peak (chip: bf16_flops)", offsetof(tpu_chip_spec_t, bf16_flops), "FLOP/s", 1, 1},
    {"the ICI bandwidth (--ici-bw)", offsetof(tpu_chip_spec_t, ici_bw), "B/s", 1, 1},
    {"the ICI latency (--ici-latency-us)", offsetof(tpu_chip_spec_t, ici_latency), "us", 1e6, 0},
    {"the DCN bandwidth (--dcn-bw)", offsetof(tpu_chip_spec_t, dcn_bw), "B/s", 1, 1},
    {"the DCN latency (--dcn-latency-us)", offsetof(tpu_chip_spec_t, dcn_latency), "us", 1e6, 0},
    {"the message cost (--msg-cost-us)", offsetof(tpu_chip_spec_t, msg_cost), "us", 1e6, 0},
    {"the PCIe bandwidth (--pcie-bw)", offsetof(tpu_chip_spec_t, pcie_bw), "B/s", 1, 1},
    {"the NIC bandwidth (--nic-bw)", offsetof(tpu_chip_spec_t, nic_bw), "B/s", 1, 1},
    {"the reduction bandwidth (--reduce-bw)", offsetof(tpu_chip_spec_t, reduce_bw), "B/s", 1, 1},
};

static double field_of(const tpu_chip_spec_t *c, const extreme_field_t *f)
{
    double v = *(const double *)(const void *)((const char *)c + f->offset);

    /* A preset's 0 is the default: the figure it stands for. */
    if (v == 0 && f->offset == offsetof(tpu_chip_spec_t, reduce_bw)) {
        return c->hbm_bw / 3;
    }
    if (v == 0 && f->offset == offsetof(tpu_chip_spec_t, nic_bw)) {
        return c->dcn_bw * tpu_chip_per_host(c);
    }
    return v;
}

/* One field against the presets' range: prints a line when extreme; returns 1 then. */
static int check_field(const tpu_chip_spec_t *chip, const extreme_field_t *f, FILE *out)
{
    double v = field_of(chip, f), lo = 0, hi = 0;
    const char *lo_name = "", *hi_name = "";
    int i, high;

    if (*(const double *)(const void *)((const char *)chip + f->offset) <= 0) {
        return 0; /* 0: not modeled, or the default */
    }
    for (i = 0; i < tpu_chip_preset_count(); i++) {
        const tpu_chip_spec_t *p = tpu_chip_preset_at(i);
        double x = field_of(p, f);

        if (x > 0 && (hi == 0 || x > hi)) {
            hi = x;
            hi_name = p->name;
        }
        if (x > 0 && (lo == 0 || x < lo)) {
            lo = x;
            lo_name = p->name;
        }
    }
    high = hi > 0 && v > APP_EXTREME_FACTOR * hi;
    if (!high && !(f->lower && lo > 0 && v < lo / APP_EXTREME_FACTOR)) {
        return 0;
    }
    fprintf(out,
            "tpuemu: warning: %s %g %s is %s%.0f%s real chip's (%s: %g %s), %s%g%s: no real "
            "chip comes near it (docs/limits.md); going on\n",
            f->name, v * f->scale, f->unit, high ? "" : "1/", high ? v / hi : lo / v,
            high ? "x the largest" : " of the smallest", high ? hi_name : lo_name,
            (high ? hi : lo) * f->scale, f->unit, high ? "over " : "under 1/", APP_EXTREME_FACTOR,
            high ? "x" : "");
    return 1;
}

int app_extremes_warn(const tpu_pod_t *pod, FILE *out)
{
    static int warned; /* once per process: the pod may be set up again */
    const tpu_chip_spec_t *chip = tpu_pod_chip(pod);
    const tpu_topo_t *t = tpu_pod_topo(pod);
    long biggest = 0;
    const char *big_name = "";
    size_t k;
    int i, a, n = 0;

    if (warned || !app_jobenv_root()) {
        return 0;
    }
    warned = 1;
    for (k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
        n += check_field(chip, &fields[k], out);
    }
    for (i = 0; i < tpu_chip_preset_count(); i++) {
        const tpu_chip_spec_t *p = tpu_chip_preset_at(i);
        long c = 1;

        for (a = 0; a < TPU_MAX_AXES; a++) {
            c *= p->max_pod[a] > 0 ? p->max_pod[a] : 1;
        }
        if (c > biggest) {
            biggest = c;
            big_name = p->name;
        }
    }
    if (biggest > 0 && (double)t->nchips > APP_EXTREME_FACTOR * (double)biggest) {
        fprintf(out,
                "tpuemu: warning: a pod of %d chips is %.0fx the largest real pod (%s: %ld "
                "chips), over %gx: planning it takes long and much memory (docs/limits.md); "
                "going on\n",
                t->nchips, (double)t->nchips / (double)biggest, big_name, biggest,
                APP_EXTREME_FACTOR);
        n++;
    }
    return n;
}
