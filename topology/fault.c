/*
 * Faults in the link model (tpu/fault.h): the text of a fault, the tables a
 * fault set makes, the check that failed links leave every slice connected, and
 * the routes around failed links.
 *
 * Tables: a bandwidth factor per directed ICI link (0 for a failed link; a slow
 * chip's factor multiplies every link leaving it), a speed factor per chip and a
 * factor per host's DCN NICs.  The link model multiplies a resource's bandwidth
 * by its factor; nothing else changes.
 *
 * Routes (tpu_faults_route): the dimension-order route when it works, else
 * another minimal dimension-order route, else a shortest route over the links
 * that work.  Step 3 is a breadth-first search backwards from the destination
 * (the hop count from every chip of the slice to it over working links), then
 * a walk from the source that only takes links that bring it one hop closer,
 * going straight on when it can, so the route has few straight runs:
 *
 *     ring of 4, link 1 -> 2 (+x) failed, route 1 -> 2:
 *         dist to 2:  chip 0: 2   chip 1: 3   chip 2: 0   chip 3: 1
 *         walk from 1: -x to 0 (dist 2), -x to 3 (1), -x to 2 (0): 3 hops, one run
 *
 * Cost: steps 1 and 2 are at most 12 dimension-order routes; step 3 is
 * O(chips of the slice) per route, paid only by flows whose minimal routes all
 * cross a failed link.
 *
 * The cut check: a breadth-first search over working links from the first chip
 * of every slice, forwards and backwards; a chip it misses cannot reach, or be
 * reached from, the others, and the message names the failed links from the
 * reached side to the other (the cut).
 */
#include "tpu/fault.h"

#include "alloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpu_faults {
    int n;
    tpu_fault_t list[TPU_MAX_FAULTS];
    int nlinks, nchips, nhosts;
    int ndown;
    double *link_factor; /* per directed link; 0: failed */
    double *chip_factor; /* per chip */
    double *nic_factor;  /* per host */
    double slowest;
};

/* The keys of a fault, as bits; which a kind needs and which it may take. */
enum {
    KEY_CHIP = 1,
    KEY_DIR = 2,
    KEY_BOTH = 4,
    KEY_FACTOR = 8,
    KEY_HOST = 16
};

static const struct {
    const char *name;
    unsigned need, may;
    const char *usage;
} kinds[TPU_FAULT_KIND_COUNT] = {
    {"slow-link", KEY_CHIP | KEY_DIR | KEY_FACTOR, KEY_BOTH,
     "slow-link:chip=C,dir=+x,factor=F[,both=yes]"},
    {"link-down", KEY_CHIP | KEY_DIR, KEY_BOTH, "link-down:chip=C,dir=+x[,both=yes]"},
    {"slow-chip", KEY_CHIP | KEY_FACTOR, 0, "slow-chip:chip=C,factor=F"},
    {"slow-nic", KEY_HOST | KEY_FACTOR, 0, "slow-nic:host=H,factor=F"},
};

static const char *const key_names[] = {"chip", "dir", "both", "factor", "host"};

const char *tpu_fault_kind_name(tpu_fault_kind_t kind)
{
    return (unsigned)kind < TPU_FAULT_KIND_COUNT ? kinds[kind].name : "unknown";
}

tpu_status_t tpu_fault_kind_parse(const char *text, tpu_fault_kind_t *kind_p, tpu_err_t *err)
{
    int k;

    for (k = 0; k < TPU_FAULT_KIND_COUNT; k++) {
        if (strcmp(text, kinds[k].name) == 0) {
            *kind_p = (tpu_fault_kind_t)k;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "unknown fault kind '%s' (kinds: slow-link, link-down, slow-chip, slow-nic)",
                       text);
}

tpu_status_t tpu_fault_dir_parse(const char *text, int *axis_p, int *dir_p, tpu_err_t *err)
{
    int axis = text[0] != '\0' ? tpu_topo_axis_of_name(text[1]) : -1;

    if ((text[0] != '+' && text[0] != '-') || axis < 0 || text[2] != '\0') {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "bad link direction '%s' (expected +x, -x, +y, -y, +z or -z)", text);
    }
    *axis_p = axis;
    *dir_p = text[0] == '+' ? 1 : -1;
    return TPU_OK;
}

void tpu_fault_init(tpu_fault_t *fault, tpu_fault_kind_t kind)
{
    memset(fault, 0, sizeof(*fault));
    fault->kind = kind;
    fault->chip = -1;
    fault->host = -1;
    fault->dir = 1;
    fault->factor = 1;
}

int tpu_fault_key_use(tpu_fault_kind_t kind, const char *key)
{
    int k;

    for (k = 0; (unsigned)kind < TPU_FAULT_KIND_COUNT && k < 5; k++) {
        if (strcmp(key, key_names[k]) == 0) {
            return (kinds[kind].need >> k) & 1 ? 2 : (kinds[kind].may >> k) & 1 ? 1 : 0;
        }
    }
    return 0;
}

const char *tpu_fault_usage(tpu_fault_kind_t kind)
{
    return (unsigned)kind < TPU_FAULT_KIND_COUNT ? kinds[kind].usage : "";
}

/* A whole number of at most 7 digits (ids and coordinates stay below TPU_MAX_CHIPS). */
static int parse_small(const char *s, size_t len, int *out)
{
    size_t i;
    int v = 0;

    if (len == 0 || len > 7) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* chip=5 or chip=(1,2): an id, or 1 to TPU_MAX_AXES + 1 coordinates. */
static int parse_chip(const char *s, size_t len, tpu_fault_t *f)
{
    size_t i, start;

    if (len > 0 && s[0] != '(') {
        f->ncoords = 0;
        return parse_small(s, len, &f->chip);
    }
    if (len < 3 || s[len - 1] != ')') {
        return -1;
    }
    f->chip = -1;
    f->ncoords = 0;
    for (start = 1, i = 1; i < len; i++) {
        if (s[i] == ',' || i == len - 1) {
            if (f->ncoords == TPU_MAX_AXES + 1 ||
                parse_small(s + start, i - start, &f->coords[f->ncoords]) != 0) {
                return -1;
            }
            f->ncoords++;
            start = i + 1;
        }
    }
    return 0;
}

tpu_status_t tpu_fault_parse(const char *text, tpu_fault_t *fault_p, tpu_err_t *err)
{
    const char *colon = strchr(text, ':'), *p;
    char kind[16], val[64];
    tpu_fault_t f;
    tpu_err_t e = {0};
    unsigned seen = 0;
    int k;

    if (colon == NULL || (size_t)(colon - text) >= sizeof(kind)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "fault '%s': expected KIND:key=value,... such as "
                           "slow-link:chip=5,dir=+x,factor=0.5 (kinds: slow-link, link-down, "
                           "slow-chip, slow-nic)",
                           text);
    }
    memcpy(kind, text, (size_t)(colon - text));
    kind[colon - text] = '\0';
    if (tpu_fault_kind_parse(kind, &f.kind, &e) != TPU_OK) {
        return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': %s", text, e.msg);
    }
    tpu_fault_init(&f, f.kind);
    for (p = colon + 1;;) {
        size_t len = 0, klen;
        int depth = 0;

        while (p[len] != '\0' && (p[len] != ',' || depth > 0)) {
            depth += p[len] == '(' ? 1 : p[len] == ')' ? -1 : 0;
            len++;
        }
        klen = strcspn(p, "=");
        if (klen >= len) {
            return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': '%.*s' is not key=value (%s)",
                               text, (int)len, p, kinds[f.kind].usage);
        }
        for (k = 0; k < 5; k++) {
            if (strlen(key_names[k]) == klen && strncmp(p, key_names[k], klen) == 0) {
                break;
            }
        }
        if (k == 5 || !(((kinds[f.kind].need | kinds[f.kind].may) >> k) & 1)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': %s takes no key '%.*s' (%s)",
                               text, kinds[f.kind].name, (int)klen, p, kinds[f.kind].usage);
        }
        if ((seen >> k) & 1) {
            return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': key '%s' given twice", text,
                               key_names[k]);
        }
        seen |= 1u << k;
        if (len - klen - 1 >= sizeof(val)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': the value of '%s' is too long",
                               text, key_names[k]);
        }
        memcpy(val, p + klen + 1, len - klen - 1);
        val[len - klen - 1] = '\0';
        if (k == 0 && parse_chip(val, strlen(val), &f) != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "fault '%s': chip '%s' is not a chip id such as 5 or coordinates "
                               "such as (1,2)",
                               text, val);
        }
        if (k == 1 && tpu_fault_dir_parse(val, &f.axis, &f.dir, &e) != TPU_OK) {
            return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': %s", text, e.msg);
        }
        if (k == 2) {
            if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "fault '%s': both takes yes or no, got '%s'", text, val);
            }
            f.both = val[0] == 'y';
        }
        if (k == 3) {
            char *end;

            errno = 0;
            f.factor = strtod(val, &end);
            if (val[0] == '\0' || *end != '\0' || isspace((unsigned char)val[0]) ||
                !(f.factor > 0 && f.factor <= 1)) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "fault '%s': factor must be a number above 0 and at most 1 "
                                   "(0.5: half the speed), got '%s'%s",
                                   text, val,
                                   f.kind == TPU_FAULT_SLOW_LINK && val[0] == '0' &&
                                           strtod(val, NULL) == 0
                                       ? " (a link that carries nothing is link-down)"
                                       : "");
            }
        }
        if (k == 4 && parse_small(val, strlen(val), &f.host) != 0) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "fault '%s': host '%s' is not a host index such as 1", text, val);
        }
        if (p[len] == '\0') {
            break;
        }
        p += len + 1;
    }
    if ((seen & kinds[f.kind].need) != kinds[f.kind].need) {
        for (k = 0; !((kinds[f.kind].need & ~seen) >> k & 1); k++) {
        }
        return tpu_err_set(err, TPU_ERR_INVALID, "fault '%s': %s needs '%s' (%s)", text,
                           kinds[f.kind].name, key_names[k], kinds[f.kind].usage);
    }
    *fault_p = f;
    return TPU_OK;
}

/* "chip 5 (1,1)" or "chip 21 (slice 1: 1,1)". */
static void chip_str(const tpu_topo_t *topo, int chip, char *buf, int len)
{
    int c[TPU_MAX_AXES], a, n;

    tpu_topo_coords(topo, chip, c);
    n = snprintf(buf, (size_t)len, "chip %d (", chip);
    if (topo->slices > 1 && n < len) {
        n += snprintf(buf + n, (size_t)(len - n), "slice %d: ", tpu_topo_slice_of(topo, chip));
    }
    for (a = 0; a < topo->naxes && n < len; a++) {
        n += snprintf(buf + n, (size_t)(len - n), "%s%d", a ? "," : "", c[a]);
    }
    if (n < len) {
        snprintf(buf + n, (size_t)(len - n), ")");
    }
}

void tpu_fault_str(const tpu_topo_t *topo, const tpu_fault_t *f, char *buf, int len)
{
    char chip[64];

    if (f->kind == TPU_FAULT_SLOW_NIC) {
        snprintf(buf, (size_t)len, "slow-nic host %d factor %g", f->host, f->factor);
        return;
    }
    chip_str(topo, f->chip, chip, sizeof(chip));
    if (f->kind == TPU_FAULT_SLOW_CHIP) {
        snprintf(buf, (size_t)len, "slow-chip %s factor %g", chip, f->factor);
        return;
    }
    snprintf(buf, (size_t)len, "%s %s %c%s%s", tpu_fault_kind_name(f->kind), chip,
             f->dir > 0 ? '+' : '-', tpu_topo_axis_name(f->axis), f->both ? " both ways" : "");
    if (f->kind == TPU_FAULT_SLOW_LINK) {
        size_t used = strlen(buf);

        snprintf(buf + used, (size_t)len - used, " factor %g", f->factor);
    }
}

/* Resolve the chip of 'f' (coordinates to an id) and check it against the pod. */
static tpu_status_t resolve_chip(const tpu_topo_t *topo, tpu_fault_t *f, tpu_err_t *err)
{
    int want = topo->naxes + (topo->slices > 1), c[TPU_MAX_AXES] = {0, 0, 0}, i, slice = 0;
    const char *kind = tpu_fault_kind_name(f->kind);

    if (f->chip >= 0) {
        if (f->chip >= topo->nchips) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "%s: chip %d is outside the pod of %d chips (0 to %d)", kind,
                               f->chip, topo->nchips, topo->nchips - 1);
        }
        return TPU_OK;
    }
    if (f->ncoords != want) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: chip coordinates need %d values for this pod%s, got %d", kind, want,
                           topo->slices > 1 ? " (the slice first)" : "", f->ncoords);
    }
    if (topo->slices > 1) {
        slice = f->coords[0];
    }
    for (i = 0; i < topo->naxes; i++) {
        c[i] = f->coords[i + (topo->slices > 1)];
    }
    f->chip = slice < topo->slices ? tpu_topo_chip(topo, slice, c) : -1;
    if (f->chip < 0) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: chip coordinates are outside the pod", kind);
    }
    return TPU_OK;
}

/* The link of a link fault, or an error naming why the torus has none there. */
static tpu_status_t fault_link(const tpu_topo_t *topo, const tpu_fault_t *f, int back, int *link_p,
                               tpu_err_t *err)
{
    char chip[64];
    int from = f->chip, dir = f->dir, l;

    if (back) {
        from = tpu_topo_neighbor(topo, f->chip, f->axis, f->dir);
        dir = -dir;
    }
    l = tpu_topo_link(topo, from, f->axis, dir);
    if (l >= 0) {
        *link_p = l;
        return TPU_OK;
    }
    chip_str(topo, f->chip, chip, sizeof(chip));
    if (f->axis >= topo->naxes || topo->dims[f->axis] < 2) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%s: the pod has no links along %s (%s)",
                           tpu_fault_kind_name(f->kind), tpu_topo_axis_name(f->axis),
                           f->axis >= topo->naxes ? "no such axis" : "1 chip");
    }
    return tpu_err_set(err, TPU_ERR_INVALID,
                       "%s: %s has no %c%s link (axis %s does not wrap and the chip is at its "
                       "edge)",
                       tpu_fault_kind_name(f->kind), chip, f->dir > 0 ? '+' : '-',
                       tpu_topo_axis_name(f->axis), tpu_topo_axis_name(f->axis));
}

/* Apply fault 'f' (chip resolved) to the tables. */
static tpu_status_t apply(tpu_faults_t *t, const tpu_topo_t *topo, const tpu_fault_t *f,
                          tpu_err_t *err)
{
    int l = -1, b, a, d;
    tpu_status_t status;

    if ((f->kind == TPU_FAULT_SLOW_LINK || f->kind == TPU_FAULT_SLOW_CHIP ||
         f->kind == TPU_FAULT_SLOW_NIC) &&
        !(f->factor > 0 && f->factor <= 1)) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "%s: factor must be above 0 and at most 1 (0.5: half the speed), got %g",
                           tpu_fault_kind_name(f->kind), f->factor);
    }
    switch (f->kind) {
    case TPU_FAULT_SLOW_LINK:
    case TPU_FAULT_LINK_DOWN:
        if (f->axis < 0 || f->axis >= TPU_MAX_AXES || (f->dir != 1 && f->dir != -1)) {
            return tpu_err_set(err, TPU_ERR_INVALID, "%s: bad link axis %d or direction %d",
                               tpu_fault_kind_name(f->kind), f->axis, f->dir);
        }
        for (b = 0; b <= f->both; b++) {
            status = fault_link(topo, f, b, &l, err);
            if (status != TPU_OK) {
                return status;
            }
            t->link_factor[l] *= f->kind == TPU_FAULT_LINK_DOWN ? 0 : f->factor;
        }
        return TPU_OK;
    case TPU_FAULT_SLOW_CHIP:
        t->chip_factor[f->chip] *= f->factor;
        for (a = 0; a < topo->naxes; a++) {
            for (d = -1; d <= 1; d += 2) {
                l = tpu_topo_link(topo, f->chip, a, d);
                if (l >= 0) {
                    t->link_factor[l] *= f->factor;
                }
            }
        }
        return TPU_OK;
    case TPU_FAULT_SLOW_NIC:
        if (f->host < 0 || f->host >= t->nhosts) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "slow-nic: host %d is outside the pod of %d hosts (0 to %d)",
                               f->host, t->nhosts, t->nhosts - 1);
        }
        t->nic_factor[f->host] *= f->factor;
        return TPU_OK;
    default:
        return tpu_err_set(err, TPU_ERR_INVALID, "unknown fault kind %d", (int)f->kind);
    }
}

static int link_up(const tpu_faults_t *t, int l)
{
    return l >= 0 && (t == NULL || t->link_factor[l] > 0);
}

/*
 * Breadth-first search over working links inside the slice of 'root': forwards
 * (chips 'root' reaches) or backwards (chips that reach 'root').  Writes the hop
 * count into dist[local id] (-1: not reached); 'queue' holds chips_per_slice ints.
 */
static void bfs(const tpu_faults_t *t, const tpu_topo_t *topo, int root, int backwards,
                int32_t *dist, int32_t *queue)
{
    int base = tpu_topo_slice_of(topo, root) * topo->chips_per_slice, head = 0, tail = 0, i;

    for (i = 0; i < topo->chips_per_slice; i++) {
        dist[i] = -1;
    }
    dist[root - base] = 0;
    queue[tail++] = root;
    while (head < tail) {
        int c = queue[head++], a, d;

        for (a = 0; a < topo->naxes; a++) {
            for (d = 1; d >= -1; d -= 2) {
                /* Forwards: c -> n over c's link (a, d).  Backwards: n -> c over n's
                 * link (a, d), n being c's neighbour at -d. */
                int n = tpu_topo_neighbor(topo, c, a, backwards ? -d : d);
                int l = n < 0       ? -1
                        : backwards ? tpu_topo_link(topo, n, a, d)
                                    : tpu_topo_link(topo, c, a, d);

                if (n >= 0 && link_up(t, l) && dist[n - base] < 0) {
                    dist[n - base] = dist[c - base] + 1;
                    queue[tail++] = n;
                }
            }
        }
    }
}

/* Is every chip of every slice reachable from every other over working links? */
static tpu_status_t check_cut(const tpu_faults_t *t, const tpu_topo_t *topo, tpu_err_t *err)
{
    int32_t *dist = tpu__malloc((size_t)topo->chips_per_slice * 2 * sizeof(int32_t));
    int s, back, i;
    tpu_status_t status = TPU_OK;

    if (dist == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory checking the failed links");
    }
    for (s = 0; s < topo->slices && status == TPU_OK; s++) {
        int base = s * topo->chips_per_slice;

        for (back = 0; back <= 1 && status == TPU_OK; back++) {
            char cut[TPU_ERR_MSG_LEN / 2], a[64], b[64];
            size_t used = 0;
            int far = -1, near = -1, ncut = 0;

            bfs(t, topo, base, back, dist, dist + topo->chips_per_slice);
            cut[0] = '\0';
            /* The cut: failed links between the reached side and the other. */
            for (i = 0; i < topo->nlinks; i++) {
                int src, axis, dir, dst, from, to;

                tpu_topo_link_ends(topo, i, &src, &axis, &dir, &dst);
                from = back ? dst : src;
                to = back ? src : dst;
                if (tpu_topo_slice_of(topo, src) != s || t->link_factor[i] > 0 ||
                    dist[from - base] < 0 || dist[to - base] >= 0) {
                    continue;
                }
                if (far < 0) {
                    near = from;
                    far = to;
                }
                chip_str(topo, src, a, sizeof(a));
                if (ncut++ < 4 && used < sizeof(cut)) {
                    used += (size_t)snprintf(cut + used, sizeof(cut) - used, "%s%s %c%s",
                                             ncut > 1 ? ", " : "", a, dir > 0 ? '+' : '-',
                                             tpu_topo_axis_name(axis));
                }
            }
            if (far < 0) {
                continue;
            }
            if (ncut > 4 && used < sizeof(cut)) {
                snprintf(cut + used, sizeof(cut) - used, " and %d more", ncut - 4);
            }
            chip_str(topo, back ? far : near, a, sizeof(a));
            chip_str(topo, back ? near : far, b, sizeof(b));
            status = tpu_err_set(err, TPU_ERR_INVALID,
                                 "the failed links cut the torus: no route from %s to %s; the "
                                 "cut is the failed link%s %s (fail fewer links, or slow them "
                                 "with slow-link instead)",
                                 a, b, ncut > 1 ? "s" : "", cut);
        }
    }
    tpu__free(dist);
    return status;
}

tpu_status_t tpu_faults_create(const tpu_topo_t *topo, const int host_dims[TPU_MAX_AXES],
                               const tpu_fault_t *list, int n, tpu_faults_t **faults_p,
                               tpu_err_t *err)
{
    tpu_faults_t *t;
    tpu_status_t status;
    int i;

    if (n < 0 || n > TPU_MAX_FAULTS) {
        return tpu_err_set(err, TPU_ERR_INVALID, "%d faults: a pod takes at most %d", n,
                           TPU_MAX_FAULTS);
    }
    t = tpu__calloc(1, sizeof(*t));
    if (t == NULL) {
        return tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the fault tables");
    }
    t->n = n;
    t->nlinks = topo->nlinks;
    t->nchips = topo->nchips;
    t->nhosts = tpu_topo_host_count(topo, host_dims);
    t->link_factor = tpu__malloc((size_t)(t->nlinks + 1) * sizeof(double));
    t->chip_factor = tpu__malloc((size_t)t->nchips * sizeof(double));
    t->nic_factor = tpu__malloc((size_t)t->nhosts * sizeof(double));
    if (t->link_factor == NULL || t->chip_factor == NULL || t->nic_factor == NULL) {
        status = tpu_err_set(err, TPU_ERR_NO_MEMORY, "out of memory for the fault tables");
        goto fail;
    }
    for (i = 0; i < t->nlinks; i++) {
        t->link_factor[i] = 1;
    }
    for (i = 0; i < t->nchips; i++) {
        t->chip_factor[i] = 1;
    }
    for (i = 0; i < t->nhosts; i++) {
        t->nic_factor[i] = 1;
    }
    for (i = 0; i < n; i++) {
        t->list[i] = list[i];
        if ((unsigned)list[i].kind >= TPU_FAULT_KIND_COUNT) {
            status = tpu_err_set(err, TPU_ERR_INVALID, "unknown fault kind %d", (int)list[i].kind);
            goto fail;
        }
        if (list[i].kind != TPU_FAULT_SLOW_NIC) {
            status = resolve_chip(topo, &t->list[i], err);
            if (status != TPU_OK) {
                goto fail;
            }
        }
        status = apply(t, topo, &t->list[i], err);
        if (status != TPU_OK) {
            goto fail;
        }
    }
    t->slowest = 1;
    for (i = 0; i < t->nchips; i++) {
        t->slowest = t->chip_factor[i] < t->slowest ? t->chip_factor[i] : t->slowest;
    }
    for (i = 0; i < t->nlinks; i++) {
        t->ndown += t->link_factor[i] == 0;
    }
    if (t->ndown > 0) {
        status = check_cut(t, topo, err);
        if (status != TPU_OK) {
            goto fail;
        }
    }
    *faults_p = t;
    return TPU_OK;
fail:
    tpu_faults_destroy(t);
    return status;
}

void tpu_faults_destroy(tpu_faults_t *faults)
{
    if (faults == NULL) {
        return;
    }
    tpu__free(faults->link_factor);
    tpu__free(faults->chip_factor);
    tpu__free(faults->nic_factor);
    tpu__free(faults);
}

int tpu_faults_count(const tpu_faults_t *faults)
{
    return faults != NULL ? faults->n : 0;
}

const tpu_fault_t *tpu_faults_get(const tpu_faults_t *faults, int i)
{
    return faults != NULL && i >= 0 && i < faults->n ? &faults->list[i] : NULL;
}

int tpu_faults_down_count(const tpu_faults_t *faults)
{
    return faults != NULL ? faults->ndown : 0;
}

double tpu_faults_link_factor(const tpu_faults_t *faults, int link)
{
    return faults != NULL && link >= 0 && link < faults->nlinks ? faults->link_factor[link] : 1;
}

double tpu_faults_chip_factor(const tpu_faults_t *faults, int chip)
{
    return faults != NULL && chip >= 0 && chip < faults->nchips ? faults->chip_factor[chip] : 1;
}

double tpu_faults_nic_factor(const tpu_faults_t *faults, int host)
{
    return faults != NULL && host >= 0 && host < faults->nhosts ? faults->nic_factor[host] : 1;
}

double tpu_faults_slowest_chip(const tpu_faults_t *faults)
{
    return faults != NULL ? faults->slowest : 1;
}

/* Does 'route' cross a failed link? */
static int crosses_down(const tpu_faults_t *t, const tpu_topo_t *topo, const tpu_route_t *route)
{
    int chip = route->src, s, h;

    for (s = 0; s < route->nseg; s++) {
        for (h = 0; h < route->seg[s].hops; h++) {
            if (!link_up(t, tpu_topo_link(topo, chip, route->seg[s].axis, route->seg[s].dir))) {
                return 1;
            }
            chip = tpu_topo_neighbor(topo, chip, route->seg[s].axis, route->seg[s].dir);
        }
    }
    return 0;
}

/* One hop of the walk of step 3: from 'c' along (a, d), one hop closer to the target? */
static int closer(const tpu_faults_t *t, const tpu_topo_t *topo, const int32_t *dist, int base,
                  int c, int a, int d)
{
    int n = tpu_topo_neighbor(topo, c, a, d);

    return n >= 0 && link_up(t, tpu_topo_link(topo, c, a, d)) && dist[n - base] >= 0 &&
           dist[n - base] == dist[c - base] - 1;
}

int tpu_faults_route(const tpu_faults_t *faults, const tpu_topo_t *topo, int src, int dst,
                     const int *order, int tie_dir, int32_t *scratch, tpu_route_t *route)
{
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    static const int default_order[3] = {0, 1, 2};
    int base = tpu_topo_slice_of(topo, dst) * topo->chips_per_slice;
    int o, t, c, a = -1, d = 0, i;
    tpu_route_t r;

    tpu_topo_route(topo, src, dst, order, tie_dir, route);
    if (faults == NULL || faults->ndown == 0 || !crosses_down(faults, topo, route)) {
        return 0;
    }
    for (o = 0; o < 6; o++) {
        for (t = 0; t < 2; t++) {
            tpu_topo_route(topo, src, dst, orders[o], t == 0 ? tie_dir : -tie_dir, &r);
            if (!crosses_down(faults, topo, &r)) {
                *route = r;
                return 0;
            }
        }
    }
    if (order == NULL) {
        order = default_order;
    }
    bfs(faults, topo, dst, 1, scratch, scratch + topo->chips_per_slice);
    if (scratch[src - base] < 0) {
        return -1;
    }
    r.src = src;
    r.dst = dst;
    r.nseg = 0;
    r.nhops = 0;
    for (c = src; c != dst;) {
        if (a < 0 || !closer(faults, topo, scratch, base, c, a, d)) {
            a = -1;
            for (i = 0; i < TPU_MAX_AXES && a < 0; i++) {
                for (d = 1; d >= -1 && order[i] < topo->naxes; d -= 2) {
                    if (order[i] >= 0 && closer(faults, topo, scratch, base, c, order[i], d)) {
                        a = order[i];
                        break;
                    }
                }
            }
            if (a < 0) {
                return -1;
            }
            if (r.nseg == TPU_ROUTE_MAX_SEGS) {
                return -1;
            }
            r.seg[r.nseg].axis = (int8_t)a;
            r.seg[r.nseg].dir = (int8_t)d;
            r.seg[r.nseg].hops = 0;
            r.nseg++;
        }
        r.seg[r.nseg - 1].hops++;
        r.nhops++;
        c = tpu_topo_neighbor(topo, c, a, d);
    }
    *route = r;
    return 0;
}
