/* Sizes and times as tpuemu reads and prints them (see units.h). */
#include "units.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

tpu_status_t app_parse_size(const char *text, unsigned long long *bytes_p, tpu_err_t *err)
{
    const char *p = text;
    unsigned long long value = 0;
    int shift = 0;

    if (text == NULL || *text == '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "bad size '': expected bytes or a number with K, M or G");
    }
    if (*p == '-' && isdigit((unsigned char)p[1])) {
        return tpu_err_set(err, TPU_ERR_INVALID, "bad size '%s': a size cannot be negative", text);
    }
    if (!isdigit((unsigned char)*p)) {
        goto bad;
    }
    for (; isdigit((unsigned char)*p); p++) {
        unsigned long long digit = (unsigned long long)(*p - '0');

        if (value > (ULLONG_MAX - digit) / 10) {
            goto too_large;
        }
        value = value * 10 + digit;
    }
    if (*p == '.' && isdigit((unsigned char)p[1])) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "bad size '%s': fractions are not allowed (write a whole number of a "
                           "smaller unit: 1536M, not 1.5G)",
                           text);
    }
    switch (*p) {
    case 'K':
    case 'k':
        shift = 10;
        break;
    case 'M':
    case 'm':
        shift = 20;
        break;
    case 'G':
    case 'g':
        shift = 30;
        break;
    default:
        break;
    }
    if (shift != 0) {
        p++;
    }
    /* "B" after any number, "iB" after a suffix ("64KiB", "16MB", "1024B"). */
    if (strcmp(p, "B") == 0 || (shift != 0 && strcmp(p, "iB") == 0)) {
        p += strlen(p);
    }
    if (*p != '\0') {
        goto bad;
    }
    if (value > (ULLONG_MAX >> shift)) {
        goto too_large;
    }
    *bytes_p = value << shift;
    return TPU_OK;
bad:
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "bad size '%s': expected bytes or a number with K, M or G", text);
too_large:
    return tpu_err_set(err, TPU_ERR_INVALID, "bad size '%s': too large", text);
}

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
