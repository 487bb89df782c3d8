//===- Heatmap.h - Attention weights as an SVG heatmap ---------*- C++ -*-===//
//
// Draws the attention weights of one sequence ([heads, T_q, T_kv], what a
// kernel with ATTNC_FEATURE_PROBS writes per batch entry) as a standalone
// SVG picture: one panel per head in a grid, query positions down, key
// positions across, tick labels on both axes, and a colour scale with its
// values. Small panels are drawn cell by cell (<rect>); larger ones as an
// embedded PNG image, and an axis longer than HeatmapOptions::maxCells is
// averaged into at most that many cells (the title says so), so the file
// stays small (a few hundred KiB) for T in the thousands. Pairs the mask
// hides (HeatmapOptions::visible) are drawn hatched grey, outside the
// colour scale, and the legend says so: a masked cell never looks like a
// near-zero weight.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_HEATMAP_H
#define ATTNC_RUNTIME_HEATMAP_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {

struct HeatmapOptions {
  /// The picture's title (first line); the tool's context, e.g. the kernel
  /// name and batch entry.
  std::string title = "attention weights";
  /// Cells per axis at most: a longer axis is averaged into this many
  /// cells (each the mean of a block of consecutive positions).
  int64_t maxCells = 256;
  /// Panels with more cells than this are drawn as one embedded PNG image
  /// instead of one <rect> per cell.
  int64_t maxRectCells = 64 * 64;
  /// [tq * tkv] (row-major, the same for every head): non-zero where the
  /// mask and the valid lengths let query i see key j. Empty: every pair
  /// is visible. Masked cells are drawn hatched grey; a downsampled cell
  /// is masked when all its pairs are, else the mean of its visible
  /// weights.
  std::vector<unsigned char> visible;
};

/// The SVG document for weights `probs` [heads, tq, tkv] (row-major): every
/// head when `head` < 0, else only that one. The colour scale runs from 0
/// to the largest (averaged) weight drawn. Empty when the shape is not
/// positive or `head` >= heads.
std::string heatmapSvg(const float *probs, int64_t heads, int64_t tq,
                       int64_t tkv, int64_t head,
                       const HeatmapOptions &options = HeatmapOptions());

/// heatmapSvg written to `path`; false with a message naming the file on
/// failure.
bool writeHeatmapSvg(const std::string &path, const float *probs,
                     int64_t heads, int64_t tq, int64_t tkv, int64_t head,
                     const HeatmapOptions &options, std::string &message);

} // namespace attnrt

#endif // ATTNC_RUNTIME_HEATMAP_H
