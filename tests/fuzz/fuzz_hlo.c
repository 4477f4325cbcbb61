/*
 * libFuzzer target for the HLO text parser and verifier (include/tpu/hlo.h): any
 * bytes give TPU_ERR_INVALID with a message, or a file whose modules are each
 * verified (an error carries a message), walked and freed.
 * Build and run with tests/fuzz/run_hlo_fuzz.sh (clang, -fsanitize=fuzzer,address,undefined);
 * the seed corpus is tests/fixtures/hlo.
 */
#include "tpu/hlo.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpu_hlo_file_t *f = NULL;
    tpu_err_t err = {0};
    uint64_t sum = 0;
    int m, c, i;

    if (tpu_hlo_parse((const char *)data, size, "fuzz.hlo", &f, &err) != TPU_OK) {
        if (err.msg[0] == '\0') {
            __builtin_trap(); /* every error carries a message */
        }
        return 0;
    }
    for (m = 0; m < f->nmodules; m++) {
        const tpu_hlo_module_t *mod = &f->modules[m];
        tpu_err_t verr = {0};

        if (tpu_hlo_verify(mod, &verr) != TPU_OK && verr.msg[0] == '\0') {
            __builtin_trap();
        }
        for (c = 0; c < mod->ncomps; c++) {
            for (i = 0; i < mod->comps[c].ninstrs; i++) {
                sum += tpu_hlo_shape_bytes(&mod->comps[c].instrs[i].shape);
                sum += (uint64_t)strlen(mod->comps[c].instrs[i].name);
            }
        }
    }
    tpu_hlo_file_destroy(f);
    return (int)(sum & 0);
}
