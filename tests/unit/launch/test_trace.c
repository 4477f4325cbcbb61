/*
 * The trace and heatmap writers of launch/output, fed by hand-made walk events
 * (no library walk): on a 1x2 open pod (2 chips, links 0: chip 0 -> 1 and
 * 1: chip 1 -> 0), one collective of 2 us in which chip 0 sends 1000 bytes to
 * chip 1 over link 0 from 0.5 us to 1.5 us in step 0, and chip 1 sends 500
 * bytes back over link 1 from 1.5 us to 2 us in step 1.  Expected texts are
 * written out by hand:
 *   - the step of chip 0 runs from 0.5 us to its last arrival, 1.5 us, less the
 *     nanosecond that keeps touching slices apart;
 *   - link 0's counter is 1000 bytes at 0.5 us and 0 at 1.5 us;
 *   - the collective's slice is 2 us less a nanosecond, the next starts at 2 us;
 *   - the heatmap has one <path class="link"> per link and names the busiest.
 */
#include "svg.h"
#include "test_main.h"
#include "trace.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);
    size_t n;

    assert_non_null(f);
    assert_non_null(buf);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void make_topo(tpu_topo_t *t)
{
    tpu_err_t err = {0};
    int dims[TPU_MAX_AXES] = {2, 1, 1}, wrap[TPU_MAX_AXES] = {0, 0, 0};

    assert_int_equal(tpu_topo_init(t, 1, dims, wrap, 1, &err), TPU_OK);
    assert_int_equal(t->nlinks, 2);
    assert_int_equal(tpu_topo_link(t, 0, 0, 1), 0);
    assert_int_equal(tpu_topo_link(t, 1, 0, -1), 1);
}

static void send(const tpu_coll_observer_t *obs, int src, int dst, int step, double s, double e,
                 uint64_t bytes, int32_t link)
{
    tpu_coll_flow_event_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.src = src;
    ev.dst = dst;
    ev.step = step;
    ev.start_s = s;
    ev.end_s = e;
    ev.bytes = bytes;
    ev.src_host = ev.dst_host = -1;
    ev.nlinks = 1;
    ev.links = &link;
    obs->on_flow(obs->user, &ev);
}

static void test_trace_by_hand(void **state)
{
    tpu_topo_t topo;
    app_trace_t *tr = NULL;
    tpu_coll_observer_t obs;
    tpu_err_t err = {0};
    char path[] = "/tmp/tpu_test_traceXXXXXX";
    char *text;
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    make_topo(&topo);
    assert_int_equal(app_trace_open(path, &topo, "by \"hand\"", -1, 0, &tr, &err), TPU_OK);
    assert_int_equal(app_trace_summary(tr), 0);
    app_trace_op_begin(tr, "psum 1 KiB", 2.0, &obs);
    assert_int_equal(obs.every_chip, 1);
    send(&obs, 0, 1, 0, 0.5e-6, 1.5e-6, 1000, 0);
    send(&obs, 1, 0, 1, 1.5e-6, 2.0e-6, 500, 1);
    assert_int_equal(app_trace_op_end(tr, 2.0, &err), TPU_OK);
    assert_true(app_trace_now_us(tr) == 2.0);
    app_trace_op_begin(tr, "next", 1.0, &obs);
    assert_int_equal(app_trace_op_end(tr, 1.0, &err), TPU_OK);
    assert_int_equal(app_trace_close(tr, &err), TPU_OK);
    text = slurp(path);
    assert_non_null(strstr(text, "\"title\": \"by \\\"hand\\\"\""));
    assert_non_null(strstr(text, "\"args\": {\"name\": \"chip 0 (0)\"}"));
    assert_non_null(strstr(text, "\"args\": {\"name\": \"chip 1 (1)\"}"));
    /* The collective on each chip: 2 us less a nanosecond. */
    assert_non_null(strstr(
        text,
        "\"name\": \"psum 1 KiB\", \"cat\": \"collective\", \"ph\": \"X\", \"pid\": 1, \"tid\": "
        "2, \"ts\": 0.000, \"dur\": 1.999"));
    assert_non_null(strstr(
        text, "\"name\": \"next\", \"cat\": \"collective\", \"ph\": \"X\", \"pid\": 2, \"tid\": 2, "
              "\"ts\": 2.000, \"dur\": 0.999"));
    /* Chip 0's step 0: from 0.5 us to its last arrival at 1.5 us. */
    assert_non_null(strstr(
        text, "\"name\": \"step 0\", \"cat\": \"step\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, "
              "\"ts\": 0.500, \"dur\": 0.999, \"args\": {\"step\": 0, "
              "\"messages\": 1, \"bytes\": 1000}"));
    /* The message on chip 0's first sends track, and its arrow (2 messages <= 128). */
    assert_non_null(strstr(
        text, "\"name\": \"-> chip 1\", \"cat\": \"dma\", \"ph\": \"X\", \"pid\": 1, \"tid\": "
              "10, \"ts\": 0.500, \"dur\": 0.999"));
    assert_non_null(strstr(text, "\"ph\": \"f\", \"bp\": \"e\", \"id\": 1, \"pid\": 2, \"tid\": "
                                 "2, \"ts\": 1.500"));
    /* Link 0: 1000 bytes in flight from 0.5 us to 1.5 us. */
    assert_non_null(strstr(
        text, "\"name\": \"ICI x+ link 0 -> chip 1\", \"cat\": \"link\", \"ph\": \"C\", \"pid\": "
              "1, \"ts\": 0.500, \"args\": {\"bytes\": 1000}"));
    assert_non_null(strstr(
        text, "\"name\": \"ICI x+ link 0 -> chip 1\", \"cat\": \"link\", \"ph\": \"C\", \"pid\": "
              "1, \"ts\": 1.500, \"args\": {\"bytes\": 0}"));
    assert_non_null(strstr(
        text, "\"name\": \"ICI x- link 1 -> chip 0\", \"cat\": \"link\", \"ph\": \"C\", \"pid\": "
              "2, \"ts\": 1.500, \"args\": {\"bytes\": 500}"));
    assert_non_null(strstr(text, "\n]}\n"));
    free(text);
    unlink(path);
}

static void test_heatmap_by_hand(void **state)
{
    tpu_topo_t topo;
    tpu_err_t err = {0};
    double bytes[2] = {1048576, 0};
    char path[] = "/tmp/tpu_test_svgXXXXXX";
    char *text, *p;
    int fd = mkstemp(path), n = 0;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    make_topo(&topo);
    assert_int_equal(app_svg_heatmap(path, &topo, NULL, bytes, NULL, 0, "a < b & c", &err), TPU_OK);
    text = slurp(path);
    for (p = text; (p = strstr(p, "class=\"link\"")) != NULL; p++) {
        n++;
    }
    assert_int_equal(n, 2);
    assert_non_null(strstr(text, "a &lt; b &amp; c"));
    assert_non_null(strstr(text, "x+ link 0, chip 0 to chip 1, 1.00 MiB"));
    /* The busiest link in the top colour, the idle one in grey. */
    assert_non_null(strstr(text, "id=\"l0\""));
    assert_non_null(strstr(text, "fill=\"#fde725\" stroke=\"#e8000b\""));
    assert_non_null(strstr(text, "fill=\"#d0d0d0\"/>"));
    free(text);
    unlink(path);
    assert_int_equal(app_svg_heatmap("/dev/full", &topo, NULL, bytes, NULL, 0, "t", &err),
                     TPU_ERR_IO);
    assert_non_null(strstr(err.msg, "cannot write '/dev/full'"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_by_hand),
        cmocka_unit_test(test_heatmap_by_hand),
    };

    return tpu_test_main(argc, argv, "trace", tests, sizeof tests / sizeof tests[0]);
}
