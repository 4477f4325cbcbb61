/*
 * '--heatmap FILE.svg': the torus as a grid, every directed ICI link an arrow
 * coloured by the bytes it carried.  Private to launch/.
 *
 * Layout: x runs left to right, y top to bottom; a 3D shape gets one panel per
 * z plane, and slices sit side by side (panels wrap into rows).  Between two
 * chips the + link is drawn above (x) or right of (y) the centre line and the -
 * link below or left of it, each pointing the way its bytes go; a wraparound
 * link is a stub leaving the edge of the panel; z links are the two small
 * triangles inside each chip (z+ top right, z- bottom left).  Colour: bytes on
 * a linear scale from 0 to the busiest link (legend with the scale), links that
 * carried nothing in grey; the busiest link is outlined and labelled.  Each
 * link is one <path class="link" id="lN"> (N its id), so a 16x20x28 (53,760
 * links) is one file of a few MB that a browser renders.
 *
 * Faults (tpu/fault.h): a slow link keeps its colour and gets a dashed orange
 * outline, a failed link is white with a dashed black outline and a cross, a
 * slow chip a dashed orange border; the legend says so when the pod has any.
 */
#ifndef APP_LAUNCH_OUTPUT_SVG_H
#define APP_LAUNCH_OUTPUT_SVG_H

#include "tpu/fault.h"
#include "tpu/status.h"
#include "tpu/topo.h"

#include "sink.h"

/*
 * Write the heatmap to 'path' ("-": stdout): 'link_bytes' per directed link id;
 * 'nic_bytes' (2 per host: egress, ingress; NULL or nhosts 0: none) is
 * summarised in a line; 'faults' (NULL: none) are marked; 'title' heads the
 * picture.
 * Error: "cannot write 'PATH': REASON".
 */
tpu_status_t app_svg_heatmap(const char *path, const tpu_topo_t *topo, const tpu_faults_t *faults,
                             const double *link_bytes, const double *nic_bytes, int nhosts,
                             const char *title, tpu_err_t *err);
/* The same into 'sink', opened by the caller (so that a target that cannot be
 * written is refused before the work); closes it. */
tpu_status_t app_svg_heatmap_sink(app_sink_t *sink, const tpu_topo_t *topo,
                                  const tpu_faults_t *faults, const double *link_bytes,
                                  const double *nic_bytes, int nhosts, const char *title,
                                  tpu_err_t *err);

/*
 * The same with each link's modeled busy seconds ('link_busy_s', NULL: unknown) over
 * 'total_s' of modeled time, shown in the links' tooltips as a busy fraction.
 */
tpu_status_t app_svg_heatmap_busy_sink(app_sink_t *sink, const tpu_topo_t *topo,
                                       const tpu_faults_t *faults, const double *link_bytes,
                                       const double *link_busy_s, double total_s,
                                       const double *nic_bytes, int nhosts, const char *title,
                                       tpu_err_t *err);

#endif /* APP_LAUNCH_OUTPUT_SVG_H */
