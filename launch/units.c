/* Sizes and times as tpuemu reads and prints them (see units.h). */
#include "units.h"

#include "config.h"

#include <stdio.h>

tpu_status_t app_units_parse_bytes(const char *name, const char *v, unsigned long long *out,
                                   tpu_err_t *err)
{
    tpu_err_t e = {0};

    if (app_parse_size(v, out, &e) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s: %s", name, e.msg);
    }
    if (*out == 0 || *out > APP_UNITS_MAX_BYTES) {
        return tpu_err_set(err, TPU_ERR_INVALID, "--%s must be 1 byte to 1P (2^50 bytes), got %s",
                           name, v);
    }
    return TPU_OK;
}

void app_units_bytes(double b, int max_unit, const int *decimals, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;

    while (b >= 1024 && u < max_unit && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, "%.*f %s", u > 0 ? decimals[u] : 0, b, unit[u]);
}

void app_report_size(unsigned long long bytes, char *buf, size_t len)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) {
        snprintf(buf, len, "%llu GiB", bytes >> 30);
    } else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) {
        snprintf(buf, len, "%llu MiB", bytes >> 20);
    } else if (bytes >= 1024 && bytes % 1024 == 0) {
        snprintf(buf, len, "%llu KiB", bytes >> 10);
    } else {
        snprintf(buf, len, "%llu B", bytes);
    }
}

const char *app_units_us(double us, char *buf, size_t len)
{
    snprintf(buf, len, us >= 1.0 || us == 0.0 ? "%.3f" : "%.4g", us);
    return buf;
}
