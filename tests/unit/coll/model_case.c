/* One request's model schedule against the walk of every chip and step (model_case.h). */
#include "model_case.h"

#include "tpu/mesh.h"
#include "tpu/topo.h"

#include "build.h"
#include "plan.h"
#include "test_coll.h"
#include "timing.h"
#include "timing_repeat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

int tpu_test_model_case(const char *shape, const char *wrap, void (*tweak)(tpu_link_model_t *),
                        const char *mesh_spec, const char *axes, tpu_coll_kind_t kind,
                        const char *algo, uint64_t per_member, int may_refuse)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_link_model_t link;
    tpu_coll_desc_t d;
    tpu_coll_plan_t *plan = NULL;
    tpu_mesh_t *mesh = NULL;
    tpu_groups_t groups;
    tpu_plan_sched_t part, full;
    tpu_coll_result_t rp, rf, rm;
    double tp = -1, tf = -2;
    tpu_status_t status;
    int flags;

    assert_true(tpu_test_model_pod(&topo, &link, shape, wrap));
    if (tweak != NULL) {
        tweak(&link);
    }
    memset(&groups, 0, sizeof(groups));
    tpu_coll_desc_init(&d);
    d.kind = kind;
    snprintf(d.algo, sizeof(d.algo), "%s", algo);
    tpu_test_coll_target(&topo, mesh_spec, axes, per_member, &mesh, &groups, &d);
    status = tpu_coll_plan_create(&topo, &link, &d, &plan, &err);
    if (status == TPU_ERR_UNSUPPORTED && may_refuse) {
        tpu_groups_fini(&groups);
        tpu_mesh_destroy(mesh);
        return -1;
    }
    if (status != TPU_OK) {
        print_error("%s %s %s %s %s: %s\n", shape, wrap, axes, tpu_coll_name(kind), algo, err.msg);
        fail();
    }
    assert_string_equal(plan->algo->name, algo);
    memset(&part, 0, sizeof(part));
    memset(&full, 0, sizeof(full));
    assert_int_equal(tpu__plan_build(plan, plan->algo, 1, -1, 1, &part, &err), TPU_OK);
    assert_int_equal(tpu__plan_build(plan, plan->algo, 1, -1, 0, &full, &err), TPU_OK);
    assert_null(full.repeat);
    assert_int_equal(tpu__time_schedule(&topo, &link, &part, &tp, &rp), TPU_OK);
    assert_int_equal(tpu__time_schedule(&topo, &link, &full, &tf, &rf), TPU_OK);
    assert_int_equal(tpu_coll_plan_model(plan, &rm, &err), TPU_OK);
    if (tp != tf || rm.modeled_us != tf * 1e6) {
        print_error("%s %s %s %s %s %llu bytes a member: model schedule %.17g, every chip and step "
                    "%.17g, plan %.17g us\n",
                    shape, wrap, axes, tpu_coll_name(kind), algo, (unsigned long long)per_member,
                    tp, tf, rm.modeled_us);
    }
    assert_true(tp == tf);
    assert_true(rm.modeled_us == tf * 1e6);
    tpu_test_same_stats(&rp, &rf);
    assert_int_equal(tpu__plan_sched_pod_flows(&topo, &part), full.s.nflows);
    assert_int_equal(rm.flows, full.s.nflows);
    assert_int_equal(tpu__repeat_steps(&part), full.s.nsteps);
    assert_int_equal(rm.steps, full.s.nsteps);
    flags = (part.orbit ? TPU_TEST_ORBIT : 0) | (part.repeat != NULL ? TPU_TEST_REPEAT : 0) |
            (part.lines ? TPU_TEST_LINES : 0);
    if (flags != 0) {
        assert_true(part.s.nflows < full.s.nflows);
        assert_int_equal(tpu_coll_plan_model_flows(plan), part.s.nflows);
    }
    tpu__plan_sched_fini(&part);
    tpu__plan_sched_fini(&full);
    tpu_coll_plan_destroy(plan);
    tpu_groups_fini(&groups);
    tpu_mesh_destroy(mesh);
    return flags;
}
