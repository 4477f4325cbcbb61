/*
 * Small pieces of the chip model: byte formatting.  (Element types and the bulk
 * bf16 conversions are in common/dtype.c, the wall clock in common/clock.c.)
 */
#include "tpu/dtype.h"
#include "tpu/mxu.h"
#include "tpu/roofline.h"
#include "tpu/vpu.h"

#include "chip_internal.h"

#include <stdio.h>
#include <string.h>

void tpu__fmt_bytes(double bytes, int decimals, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = bytes;
    int u = -1;

    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u < 0) {
        snprintf(buf, len, "%.0f B", bytes);
    } else {
        snprintf(buf, len, "%.*f %s", decimals, v, units[u]);
    }
}
