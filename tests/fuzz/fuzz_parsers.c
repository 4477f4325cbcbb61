/*
 * libFuzzer targets for the text parsers of tpuemu, one per build (-DTARGET=...):
 *
 *   shape   tpu_topo_parse_shape and tpu_topo_parse_wrap ("4x4x4", "x,z")
 *   size    app_parse_size ("64K", "1G")
 *   mesh    tpu_mesh_parse ("data=4,model=4")
 *   coords  app_parse_coords on a 4x4, 4x4x4 or 2-slice 2x2 pod ("1,2", "5")
 *   yaml    app_config_load_string (the --config file)
 *
 * Each checks what the parser promises: on success the output is in range, on
 * failure the error holds one line (no control character) that fits its buffer.
 * Built and run by tests/fuzz/run_fuzz.sh.
 */
#include "tpu/status.h"
#include "tpu/topo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(TARGET_SIZE)
#include "units.h"
#endif
#if defined(TARGET_YAML)
#include "config_yaml.h"
#endif
#if defined(TARGET_MESH)
#include "tpu/mesh.h"
#endif
#if defined(TARGET_COORDS)
#include "coords.h"
#endif

static void check_err(const tpu_err_t *e)
{
    const char *p;

    if (e->status == TPU_OK) {
        return;
    }
    if (e->msg[0] == '\0' || strlen(e->msg) >= sizeof(e->msg)) {
        abort();
    }
    for (p = e->msg; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    tpu_err_t e = {0};

    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
#if defined(TARGET_SHAPE)
    {
        int dims[TPU_MAX_AXES], naxes = 0, wrap[TPU_MAX_AXES], is_auto, a;

        if (tpu_topo_parse_shape(text, dims, &naxes, &e) == TPU_OK) {
            if (naxes < 1 || naxes > TPU_MAX_AXES) {
                abort();
            }
            for (a = 0; a < naxes; a++) {
                if (dims[a] < 1 || dims[a] > TPU_MAX_DIM) {
                    abort();
                }
            }
        }
        check_err(&e);
        tpu_err_clear(&e);
        tpu_topo_parse_wrap(text, 3, wrap, &is_auto, &e);
        check_err(&e);
    }
#elif defined(TARGET_SIZE)
    {
        unsigned long long bytes = 0;

        app_parse_size(text, &bytes, &e);
        check_err(&e);
    }
#elif defined(TARGET_MESH)
    {
        char names[TPU_MESH_MAX_AXES][TPU_MESH_NAME_LEN];
        int sizes[TPU_MESH_MAX_AXES], n = 0;

        tpu_mesh_parse(text, names, sizes, &n, &e);
        check_err(&e);
    }
#elif defined(TARGET_COORDS)
    {
        static const int shapes[3][TPU_MAX_AXES] = {{4, 4, 1}, {4, 4, 4}, {2, 2, 1}};
        static const char *const names[3] = {"4x4", "4x4x4", "2x2"};
        int k = size > 0 ? data[0] % 3 : 0, wrap[TPU_MAX_AXES] = {1, 1, 1}, chip = -1;
        tpu_topo_t t;

        if (tpu_topo_init(&t, k == 1 ? 3 : 2, shapes[k], wrap, k == 2 ? 2 : 1, NULL) == TPU_OK) {
            if (app_parse_coords(&t, names[k], size > 0 ? text + 1 : text, "src", &chip, &e) ==
                    TPU_OK &&
                (chip < 0 || chip >= t.nchips)) {
                abort();
            }
            check_err(&e);
        }
    }
#elif defined(TARGET_YAML)
    {
        app_config_t cfg;

        app_config_init(&cfg);
        app_config_load_string((const char *)data, size, "fuzz.yaml", &cfg, &e);
        check_err(&e);
    }
#else
#error "define TARGET_SHAPE, TARGET_SIZE, TARGET_MESH, TARGET_COORDS or TARGET_YAML"
#endif
    free(text);
    return 0;
}
