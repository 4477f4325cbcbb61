/* A program outside the tree, built against the installed libtpuemu as C and as C++
 * (tests/style/install.sh). */
#include <stdio.h>
#include <string.h>
#include <tpu.h>

/* The headers' version as text, to compare with the library's (tpu_version()). */
#define STR_(x) #x
#define STR(x)  STR_(x)
#define TPU_VERSION_STRING_OF_HEADER \
    STR(TPU_VERSION_MAJOR) "." STR(TPU_VERSION_MINOR) "." STR(TPU_VERSION_PATCH)
int main(void)
{
    tpu_err_t err = {0};
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_topo_t topo;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan;
    tpu_coll_result_t res;
    int dims[3] = {16, 16, 1}, wrap[3] = {1, 1, 0};

    tpu_chip_preset("v5e", &chip, &err);
    tpu_chip_link_model(&chip, &link);
    tpu_topo_init(&topo, 2, dims, wrap, 1, &err);
    tpu_coll_desc_init(&d);
    d.axes = 3;
    d.bytes = 64u << 20;
    if (tpu_coll_plan_create(&topo, &link, &d, &plan, &err) ||
        tpu_coll_plan_model(plan, &res, &err)) {
        printf("%s\n", err.msg);
        return 1;
    }
    if (strcmp(tpu_version(), TPU_VERSION_STRING_OF_HEADER) != 0) {
        printf("library %s, headers %s\n", tpu_version(), TPU_VERSION_STRING_OF_HEADER);
        return 1;
    }
    printf("psum 64 MiB on v5e 16x16: %.3f us (%s), libtpuemu %s\n", res.modeled_us, res.algorithm,
           tpu_version());
    tpu_coll_plan_destroy(plan);
    return 0;
}
