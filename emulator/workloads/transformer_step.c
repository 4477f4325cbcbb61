/*
 * The transformer's training step on one chip: forward and loss
 * (transformer_fwd.c), backward (transformer_bwd.c), the SGD update
 * (transformer_params.c), and the step's report: the loss before the update
 * and the modeled compute of the step (the MXU's and the VPU's rooflines).
 */
#include "transformer_ops.h"

#include <string.h>

tpu_status_t tpu_xfmr_step(tpu_xfmr_t *xf, const int32_t *x, const int32_t *y, double lr,
                           tpu_xfmr_report_t *rep_p, tpu_err_t *err)
{
    tpu_status_t status;
    double loss = 0;

    memset(&xf->cost, 0, sizeof(xf->cost));
    status = tpu_xfmr_forward(xf, x, y, &loss, err);
    status = status == TPU_OK ? tpu_xfmr_backward(xf, err) : status;
    if (status != TPU_OK) {
        return status;
    }
    tpu_xfmr_sgd(xf, lr);
    if (rep_p != NULL) {
        *rep_p = xf->cost;
        rep_p->loss = loss;
    }
    return TPU_OK;
}
