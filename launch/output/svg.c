/*
 * The link heatmap as SVG (see svg.h): every chip labelled with its id and
 * coordinates, every link and chip with a <title> tooltip (bytes, busy fraction).
 */
#include "svg.h"

#include "alloc.h"
#include "json.h"
#include "sink.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct layout {
    double cell;    /* pixels between chip centres */
    double panel_w; /* a panel with its margins */
    double panel_h;
    int per_row; /* panels per row */
    double top;  /* where the panels start */
} layout_t;

/* Five stops of a perceptually even scale (viridis), low to high. */
static const unsigned char stops[5][3] = {
    {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};

static void colour(double v, double max, char *buf, size_t len)
{
    double f, x;
    int i, c[3], k;

    if (!(v > 0) || !(max > 0)) {
        snprintf(buf, len, "#d0d0d0");
        return;
    }
    f = v / max;
    f = f > 1 ? 1 : f;
    x = f * 4;
    i = (int)x;
    i = i > 3 ? 3 : i;
    x -= i;
    for (k = 0; k < 3; k++) {
        c[k] = (int)lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * x);
    }
    snprintf(buf, len, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static void human(double b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;

    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char u = (unsigned char)*s;
        int n = app_json_utf8_len(s);

        if (n == 0) { /* valid UTF-8: a stray byte as its Latin-1 character */
            fprintf(f, "&#%u;", (unsigned)u);
            continue;
        }
        if (n > 1) {
            fwrite(s, 1, (size_t)n, f);
            s += n - 1;
            continue;
        }
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n') {
                fputc(*s, f);
            }
        }
    }
}

/* Top-left corner of panel 'p'. */
static void panel_origin(const layout_t *L, int p, double *x_p, double *y_p)
{
    *x_p = 20 + (p % L->per_row) * L->panel_w;
    *y_p = L->top + (p / L->per_row) * L->panel_h;
}

/* Centre of a chip in the picture. */
static void chip_centre(const tpu_topo_t *t, const layout_t *L, int chip, double *x_p, double *y_p)
{
    int c[TPU_MAX_AXES], p;
    double ox, oy;

    tpu_topo_coords(t, chip, c);
    p = tpu_topo_slice_of(t, chip) * t->dims[2] + (t->naxes > 2 ? c[2] : 0);
    panel_origin(L, p, &ox, &oy);
    *x_p = ox + L->cell * (c[0] + 1);
    *y_p = oy + 24 + L->cell * ((t->naxes > 1 ? c[1] : 0) + 1);
}

/* An arrow from (x0, y0) to (x1, y1), 'w' wide, as one path. */
static void arrow(FILE *f, int id, double x0, double y0, double x1, double y1, double w,
                  const char *fill, const char *stroke, const char *tip)
{
    double dx = x1 - x0, dy = y1 - y0, len = sqrt(dx * dx + dy * dy), ux, uy, px, py, hx, hy;
    double head = w * 1.6;

    if (len <= 0) {
        return;
    }
    ux = dx / len;
    uy = dy / len;
    px = -uy;
    py = ux;
    head = head < len * 0.6 ? head : len * 0.6;
    hx = x1 - ux * head;
    hy = y1 - uy * head;
    fprintf(f,
            "<path class=\"link\" id=\"l%d\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f "
            "%.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"%s><title>",
            id, x0 + px * w / 2, y0 + py * w / 2, hx + px * w / 2, hy + py * w / 2, hx + px * w,
            hy + py * w, x1, y1, hx - px * w, hy - py * w, hx - px * w / 2, hy - py * w / 2,
            x0 - px * w / 2, y0 - py * w / 2, fill, stroke);
    xml_text(f, tip);
    fputs("</title></path>\n", f);
}

/* Where link 'l' is drawn: its arrow's ends (or, for z links, a triangle). */
static void draw_link(FILE *f, const tpu_topo_t *t, const layout_t *L, int l, const char *fill,
                      const char *stroke, const char *tip, double *mx_p, double *my_p)
{
    int src, axis, dir, dst, c[TPU_MAX_AXES];
    double sx, sy, dx, dy, cell = L->cell, half = cell * 0.22, off = cell * 0.09;
    double w = cell * 0.075 > 1 ? cell * 0.075 : 1;

    tpu_topo_link_ends(t, l, &src, &axis, &dir, &dst);
    tpu_topo_coords(t, src, c);
    chip_centre(t, L, src, &sx, &sy);
    if (axis == 2) {
        /* z: a triangle in the chip's corner (z+ top right, z- bottom left). */
        double s = dir > 0 ? 1 : -1, a = half * 0.95;

        fprintf(f,
                "<path class=\"link\" id=\"l%d\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" "
                "fill=\"%s\"%s><title>",
                l, sx + s * a, sy - s * a, sx + s * a * 0.1, sy - s * a, sx + s * a,
                sy - s * a * 0.1, fill, stroke);
        xml_text(f, tip);
        fputs("</title></path>\n", f);
        *mx_p = sx + s * a;
        *my_p = sy - s * a;
        return;
    }
    {
        int wraps = (dir > 0 && c[axis] == t->dims[axis] - 1) || (dir < 0 && c[axis] == 0);
        double ux = axis == 0 ? dir : 0, uy = axis == 1 ? dir : 0;
        /* + links above (x) or right of (y) the centre line, - links the other side. */
        double ox = axis == 1 ? dir * off : 0, oy = axis == 0 ? -dir * off : 0;
        double x0 = sx + ux * half + ox, y0 = sy + uy * half + oy, x1, y1;

        if (wraps) {
            x1 = sx + ux * cell * 0.62 + ox;
            y1 = sy + uy * cell * 0.62 + oy;
        } else {
            chip_centre(t, L, dst, &dx, &dy);
            x1 = dx - ux * half + ox;
            y1 = dy - uy * half + oy;
        }
        arrow(f, l, x0, y0, x1, y1, w, fill, stroke, tip);
        *mx_p = (x0 + x1) / 2;
        *my_p = (y0 + y1) / 2;
    }
}

/* "chip 5 (1,1)", with the slice when there are several: "chip 9 (slice 1: 0,1)". */
static void chip_name(const tpu_topo_t *t, int chip, char *buf, size_t len)
{
    int c[TPU_MAX_AXES], a, n;

    tpu_topo_coords(t, chip, c);
    n = snprintf(buf, len, "chip %d (", chip);
    if (t->slices > 1 && n < (int)len) {
        n += snprintf(buf + n, len - (size_t)n, "slice %d: ", tpu_topo_slice_of(t, chip));
    }
    for (a = 0; a < t->naxes && n < (int)len; a++) {
        n += snprintf(buf + n, len - (size_t)n, "%s%d", a ? "," : "", c[a]);
    }
    if (n < (int)len) {
        snprintf(buf + n, len - (size_t)n, ")");
    }
}

/* A link's tooltip: which link, its ends, its bytes and (when known) its busy fraction. */
static void link_tip(const tpu_topo_t *t, int l, double bytes, const double *busy_s, double total_s,
                     char *buf, size_t len)
{
    int src, axis, dir, dst, n;
    char a[48], b[48], h[32];

    tpu_topo_link_ends(t, l, &src, &axis, &dir, &dst);
    chip_name(t, src, a, sizeof(a));
    chip_name(t, dst, b, sizeof(b));
    human(bytes, h, sizeof(h));
    n = snprintf(buf, len, "%s%c link %d: %s -> %s: %s (%.0f bytes)", tpu_topo_axis_name(axis),
                 dir > 0 ? '+' : '-', l, a, b, h, bytes);
    if (busy_s != NULL && total_s > 0 && n < (int)len) {
        snprintf(buf + n, len - (size_t)n, ", busy %.1f%% of the modeled time",
                 100.0 * busy_s[l] / total_s);
    }
}

/* The outline of link 'l': busiest (red), failed (dashed black), slow (dashed orange). */
static const char *link_stroke(const tpu_faults_t *faults, int l, int busiest)
{
    double factor = tpu_faults_link_factor(faults, l);

    if (factor == 0) {
        return " stroke=\"#000000\" stroke-width=\"1.2\" stroke-dasharray=\"2 2\"";
    }
    if (factor < 1) {
        return " stroke=\"#ff7f0e\" stroke-width=\"1.8\" stroke-dasharray=\"3 2\"";
    }
    return l == busiest ? " stroke=\"#e8000b\" stroke-width=\"2\"" : "";
}

/* The legend lines of the faults, from y = 'y'; returns the height used. */
static double fault_legend(FILE *f, const tpu_topo_t *t, const tpu_faults_t *faults, double y)
{
    int n = tpu_faults_count(faults), i, shown = 0;
    double h = 0;

    if (n == 0) {
        return 0;
    }
    fprintf(f,
            "<g class=\"fault-legend\"><rect x=\"20\" y=\"%.0f\" width=\"24\" height=\"10\" "
            "fill=\"#21918c\" stroke=\"#ff7f0e\" stroke-width=\"1.8\" "
            "stroke-dasharray=\"3 2\"/><text x=\"50\" y=\"%.0f\">slow link (dashed orange; "
            "a slow chip's border too)</text><rect x=\"330\" y=\"%.0f\" width=\"24\" "
            "height=\"10\" fill=\"#ffffff\" stroke=\"#000000\" stroke-width=\"1.2\" "
            "stroke-dasharray=\"2 2\"/><text x=\"336\" y=\"%.0f\" font-weight=\"bold\">"
            "&#215;</text><text x=\"360\" y=\"%.0f\">failed link (no traffic, routed "
            "around)</text></g>\n",
            y, y + 9, y, y + 9, y + 9);
    h += 16;
    for (i = 0; i < n && shown < 4; i++, shown++) {
        char buf[160];

        tpu_fault_str(t, tpu_faults_get(faults, i), buf, sizeof(buf));
        fprintf(f, "<text class=\"fault\" x=\"20\" y=\"%.0f\">fault: ", y + h + 9);
        xml_text(f, buf);
        fputs("</text>\n", f);
        h += 15;
    }
    if (n > shown) {
        fprintf(f, "<text x=\"20\" y=\"%.0f\">and %d more faults</text>\n", y + h + 9, n - shown);
        h += 15;
    }
    return h + 4;
}

tpu_status_t app_svg_heatmap(const char *path, const tpu_topo_t *t, const tpu_faults_t *faults,
                             const double *link_bytes, const double *nic_bytes, int nhosts,
                             const char *title, tpu_err_t *err)
{
    app_sink_t sink;
    tpu_status_t status;

    status = app_sink_open(&sink, path, err);
    if (status != TPU_OK) {
        return status;
    }
    return app_svg_heatmap_sink(&sink, t, faults, link_bytes, nic_bytes, nhosts, title, err);
}

tpu_status_t app_svg_heatmap_sink(app_sink_t *sink, const tpu_topo_t *t, const tpu_faults_t *faults,
                                  const double *link_bytes, const double *nic_bytes, int nhosts,
                                  const char *title, tpu_err_t *err)
{
    return app_svg_heatmap_busy_sink(sink, t, faults, link_bytes, NULL, 0, nic_bytes, nhosts, title,
                                     err);
}

/* Every chip: its box, its id and coordinates when the cell has room, its tooltip. */
static void chips(FILE *f, const tpu_topo_t *t, const layout_t *L, const tpu_faults_t *faults,
                  const double *link_bytes)
{
    double *sent = tpu__calloc(2 * (size_t)t->nchips + 1, sizeof(double)), *got;
    int c, l;

    got = sent != NULL ? sent + t->nchips : NULL;
    for (l = 0; sent != NULL && l < t->nlinks; l++) {
        int src, axis, dir, dst;

        tpu_topo_link_ends(t, l, &src, &axis, &dir, &dst);
        sent[src] += link_bytes[l];
        got[dst] += link_bytes[l];
    }
    fputs("<g class=\"chips\" fill=\"#f4f4f4\" stroke=\"#555555\" stroke-width=\"0.6\">\n", f);
    for (c = 0; c < t->nchips; c++) {
        double x, y, h = L->cell * 0.22;
        char name[64], a[32], b[32];

        chip_centre(t, L, c, &x, &y);
        chip_name(t, c, name, sizeof(name));
        fprintf(f, "<rect class=\"chip%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"%s>",
                tpu_faults_chip_factor(faults, c) < 1 ? " slow-chip" : "", x - h, y - h, 2 * h,
                2 * h,
                tpu_faults_chip_factor(faults, c) < 1
                    ? " stroke=\"#ff7f0e\" stroke-width=\"2\" stroke-dasharray=\"3 2\""
                    : "");
        human(sent != NULL ? sent[c] : 0, a, sizeof(a));
        human(got != NULL ? got[c] : 0, b, sizeof(b));
        fputs("<title>", f);
        xml_text(f, name);
        fprintf(f, ": sent %s, received %s over ICI%s</title></rect>\n", a, b,
                tpu_faults_chip_factor(faults, c) < 1 ? " (a slow chip)" : "");
    }
    fputs("</g>\n", f);
    if (L->cell < 28) {
        tpu__free(sent);
        return; /* no room: the tooltips name the chips */
    }
    fprintf(f,
            "<g class=\"chip-labels\" text-anchor=\"middle\" font-size=\"%.1f\" fill=\"#222222\" "
            "pointer-events=\"none\">\n",
            L->cell * (t->naxes > 2 || t->slices > 1 ? 0.1 : 0.12));
    for (c = 0; c < t->nchips; c++) {
        int co[TPU_MAX_AXES], a, n = 0;
        double x, y;
        char xy[32];

        chip_centre(t, L, c, &x, &y);
        tpu_topo_coords(t, c, co);
        for (a = 0; a < t->naxes && n < (int)sizeof(xy); a++) {
            n += snprintf(xy + n, sizeof(xy) - (size_t)n, "%s%d", a ? "," : "", co[a]);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%d</text><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                x, y - L->cell * 0.02, c, x, y + L->cell * 0.12, xy);
    }
    fputs("</g>\n", f);
    tpu__free(sent);
}

tpu_status_t app_svg_heatmap_busy_sink(app_sink_t *sink, const tpu_topo_t *t,
                                       const tpu_faults_t *faults, const double *link_bytes,
                                       const double *link_busy_s, double total_s,
                                       const double *nic_bytes, int nhosts, const char *title,
                                       tpu_err_t *err)
{
    FILE *f = sink->f;
    layout_t L;
    int npanels = t->slices * t->dims[2], p, l, busiest = -1, dx = t->dims[0];
    int dy = t->naxes > 1 ? t->dims[1] : 1;
    double max = 0, width, height, total = 0, ox, oy, mx = 0, my = 0;
    char fill[16], a[32], b[32], top[32], tip[256];

    for (l = 0; l < t->nlinks; l++) {
        total += link_bytes[l];
        if (link_bytes[l] > max) {
            max = link_bytes[l];
            busiest = l;
        }
    }
    L.cell = (npanels > 1 ? 300.0 : 560.0) / (dx > dy ? dx : dy);
    L.cell = L.cell < 10 ? 10 : L.cell > 64 ? 64 : L.cell;
    L.panel_w = L.cell * (dx + 1) + 20;
    L.panel_h = L.cell * (dy + 1) + 40;
    L.per_row = (int)(1500 / L.panel_w);
    L.per_row = L.per_row < 1 ? 1 : L.per_row > npanels ? npanels : L.per_row;
    L.top = 118 + (tpu_faults_count(faults) > 0
                       ? 20 + 15 * (tpu_faults_count(faults) < 5 ? tpu_faults_count(faults) : 5)
                       : 0);
    width = 40 + L.per_row * L.panel_w;
    width = width < (t->naxes > 2 ? 1100 : 640) ? (t->naxes > 2 ? 1100 : 640) : width;
    height = L.top + ((npanels + L.per_row - 1) / L.per_row) * L.panel_h + 30;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\" font-size=\"12\">\n",
            width, height, width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    fputs("<text x=\"20\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", f);
    xml_text(f, title);
    fputs("</text>\n", f);
    human(total, a, sizeof(a));
    fprintf(f,
            "<text x=\"20\" y=\"40\">Colour: bytes each directed ICI link carried (%d links, %s "
            "in all).</text>\n<text x=\"20\" y=\"56\">Arrows point the way the bytes go; stubs "
            "at the edges are wraparound links.</text>\n",
            t->nlinks, a);
    if (t->naxes > 2) {
        fputs("<text x=\"330\" y=\"92\">z links: the corner triangles of each chip, z+ top "
              "right, z- bottom left.</text>\n",
              f);
    }
    /* The legend: the scale from 0 to the busiest link. */
    fprintf(f, "<defs><linearGradient id=\"scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">"
               "<stop offset=\"0\" stop-color=\"#440154\"/><stop offset=\"0.25\" "
               "stop-color=\"#3b528b\"/><stop offset=\"0.5\" stop-color=\"#21918c\"/>"
               "<stop offset=\"0.75\" stop-color=\"#5ec962\"/><stop offset=\"1\" "
               "stop-color=\"#fde725\"/></linearGradient></defs>\n");
    fprintf(f, "<g class=\"legend\"><rect x=\"20\" y=\"66\" width=\"14\" height=\"12\" "
               "fill=\"#d0d0d0\"/><text x=\"38\" y=\"76\">0</text>"
               "<rect x=\"70\" y=\"66\" width=\"240\" height=\"12\" fill=\"url(#scale)\"/>");
    human(max / 2, a, sizeof(a));
    human(max, b, sizeof(b));
    snprintf(top, sizeof(top), "%s", b);
    fprintf(f,
            "<text x=\"70\" y=\"92\">&gt;0</text><text x=\"190\" y=\"92\" "
            "text-anchor=\"middle\">%s</text><text x=\"310\" y=\"92\" "
            "text-anchor=\"end\">%s</text><text x=\"320\" y=\"76\">bytes per link (linear "
            "scale)</text></g>\n",
            a, b);
    if (busiest >= 0) {
        int src, axis, dir, dst;

        tpu_topo_link_ends(t, busiest, &src, &axis, &dir, &dst);
        fprintf(f,
                "<text x=\"20\" y=\"110\">Busiest link (outlined in red): %s%c link %d, chip %d "
                "to chip %d, %s.",
                tpu_topo_axis_name(axis), dir > 0 ? '+' : '-', busiest, src, dst, b);
        if (nic_bytes != NULL && nhosts > 0 && t->slices > 1) {
            double e = 0, i = 0;
            int h;

            for (h = 0; h < nhosts; h++) {
                e = nic_bytes[2 * h] > e ? nic_bytes[2 * h] : e;
                i = nic_bytes[2 * h + 1] > i ? nic_bytes[2 * h + 1] : i;
            }
            human(e, a, sizeof(a));
            human(i, b, sizeof(b));
            fprintf(f, " DCN: busiest host NIC out %s, in %s.", a, b);
        }
        fputs("</text>\n", f);
    }
    fault_legend(f, t, faults, 118);
    for (p = 0; p < npanels; p++) {
        panel_origin(&L, p, &ox, &oy);
        fprintf(f,
                "<g class=\"panel\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"none\" stroke=\"#bbbbbb\"/><text x=\"%.1f\" y=\"%.1f\">",
                ox, oy, L.panel_w - 10, L.panel_h - 10, ox + 6, oy + 16);
        if (t->slices > 1) {
            fprintf(f, "slice %d%s", p / t->dims[2], t->naxes > 2 ? ", " : "");
        }
        if (t->naxes > 2) {
            fprintf(f, "z = %d", p % t->dims[2]);
        } else if (t->slices == 1) {
            fprintf(f, "x: left to right, y: top to bottom");
        }
        fputs("</text></g>\n", f);
    }
    chips(f, t, &L, faults, link_bytes);
    fputs("<g class=\"links\">\n", f);
    for (l = 0; l < t->nlinks; l++) {
        double x, y;

        colour(link_bytes[l], max, fill, sizeof(fill));
        if (tpu_faults_link_factor(faults, l) == 0) {
            snprintf(fill, sizeof(fill), "#ffffff");
        }
        link_tip(t, l, link_bytes[l], link_busy_s, total_s, tip, sizeof(tip));
        draw_link(f, t, &L, l, fill, link_stroke(faults, l, busiest), tip, &x, &y);
        if (tpu_faults_link_factor(faults, l) == 0) {
            fprintf(f,
                    "<text class=\"failed\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                    "font-weight=\"bold\" font-size=\"%.0f\">&#215;</text>\n",
                    x, y + L.cell * 0.1, L.cell * 0.3 > 10 ? L.cell * 0.3 : 10);
        }
        if (l == busiest) {
            mx = x;
            my = y;
        }
    }
    fputs("</g>\n", f);
    /* The busiest link's label at the top right of its panel, clear of the grid (beside
     * the link it would cross other links or a chip). */
    for (p = 0; busiest >= 0 && p < npanels; p++) {
        panel_origin(&L, p, &ox, &oy);
        if (mx >= ox && mx < ox + L.panel_w && my >= oy && my < oy + L.panel_h) {
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#e8000b\" "
                    "font-weight=\"bold\">busiest: %s</text>\n",
                    ox + L.panel_w - 16, oy + 16, top);
            break;
        }
    }
    fputs("</svg>\n", f);
    return app_sink_close(sink, err);
}
