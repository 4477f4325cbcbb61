/*
 * Sizes and times as tpuemu reads and prints them: a size (bytes with K, M, G
 * suffixes, from a flag or the pod file), byte counts in binary units,
 * microseconds.  Every size the program reads is parsed here, and every command
 * formats through these.  Private to launch/.
 */
#ifndef APP_UNITS_H
#define APP_UNITS_H

#include "tpu/status.h"

#include <stddef.h>

/* Sizes above this are refused (2^50 bytes, 1 PiB). */
#define APP_UNITS_MAX_BYTES (1ull << 50)

/*
 * Parse a size: plain bytes ("1024") or a number with a suffix K, M, G (powers of
 * two: 1K = 1024).  Used by the CLI (--bytes) and the YAML file (hbm_bytes: 16G).
 * @return TPU_OK, or TPU_ERR_INVALID with a message naming 'text'.
 */
tpu_status_t app_parse_size(const char *text, unsigned long long *bytes_p, tpu_err_t *err);

/*
 * A size flag '--NAME V': bytes or a number with K, M, G (powers of 2), above 0
 * and at most APP_UNITS_MAX_BYTES; one message naming the flag otherwise.
 */
tpu_status_t app_units_parse_bytes(const char *name, const char *v, unsigned long long *out,
                                   tpu_err_t *err);

/*
 * 'bytes' in the largest binary unit it reaches ("1.5 MiB", "64 B"), up to
 * 'max_unit' (0 B, 1 KiB, 2 MiB, 3 GiB, 4 TiB); 'decimals[u]' is the precision of
 * unit u (B is always whole).  Each table has its own precisions, as its readers
 * know them.
 */
void app_units_bytes(double bytes, int max_unit, const int *decimals, char *buf, size_t len);
/* An exact size for names: "1 MiB" when a whole number of a unit, else "1000 B". */
void app_report_size(unsigned long long bytes, char *buf, size_t len);
/* Microseconds with 3 decimals, or 4 significant digits below 1 us. */
const char *app_units_us(double us, char *buf, size_t len);

#endif /* APP_UNITS_H */
