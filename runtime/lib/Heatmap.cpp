//===- Heatmap.cpp - Attention weights as an SVG heatmap -------*- C++ -*-===//
//
// A plain SVG writer (no library): a grid of panels, each a matrix of
// coloured cells (rects, or one embedded PNG per panel for large matrices:
// a <rect> per cell would make a 256x256 panel several MB), axis ticks at
// "nice" token positions, and a vertical colour bar. The colour map is
// viridis (perceptually uniform, readable in grey), interpolated between
// 9 of its anchor colours. The PNG is written here too: RGB, filter 0,
// zlib's compress2 and crc32 (zlib is already a dependency of libattnrt).
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Heatmap.h"
#include "attnc/runtime/Files.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace attnrt {
namespace {

struct Rgb {
  unsigned char r, g, b;
};

/// Viridis at 0, 1/8, ..., 1.
constexpr Rgb kViridis[] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                            {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                            {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
constexpr int kStops = sizeof(kViridis) / sizeof(kViridis[0]);
/// Masked cells: stripes of two neutral greys (viridis has no grey).
constexpr Rgb kMaskedLight = {217, 217, 217}, kMaskedDark = {150, 150, 150};

Rgb colour(double t) {
  if (!(t > 0)) // also NaN: the bottom of the scale
    t = 0;
  if (t > 1)
    t = 1;
  double pos = t * (kStops - 1);
  int i = std::min(int(pos), kStops - 2);
  double f = pos - i;
  auto mix = [&](unsigned char a, unsigned char b) {
    return static_cast<unsigned char>(std::lround(a + (b - a) * f));
  };
  return {mix(kViridis[i].r, kViridis[i + 1].r),
          mix(kViridis[i].g, kViridis[i + 1].g),
          mix(kViridis[i].b, kViridis[i + 1].b)};
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

/// A coordinate or size, short.
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string xmlEscape(const std::string &s) {
  std::string r;
  for (char c : s) {
    switch (c) {
    case '&': r += "&amp;"; break;
    case '<': r += "&lt;"; break;
    case '>': r += "&gt;"; break;
    case '"': r += "&quot;"; break;
    default:
      // Control characters are not allowed in XML 1.0.
      r += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? '?' : c;
    }
  }
  return r;
}

/// The smallest of 1, 2, 5, 10, 20, 50, ... that gives at most `most`
/// ticks over n positions.
int64_t tickStep(int64_t n, int64_t most) {
  for (int64_t scale = 1;; scale *= 10)
    for (int64_t m : {1, 2, 5})
      if (n <= m * scale * most || m * scale > n)
        return m * scale;
}

std::string base64(const std::vector<unsigned char> &in) {
  static const char *k =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = in[i] << 16;
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (in[i] << 16) | (in[i + 1] << 8);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

void put32(std::vector<unsigned char> &out, uint32_t v) {
  out.push_back(static_cast<unsigned char>(v >> 24));
  out.push_back(static_cast<unsigned char>(v >> 16));
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}

void chunk(std::vector<unsigned char> &out, const char *type,
           const std::vector<unsigned char> &data) {
  put32(out, static_cast<uint32_t>(data.size()));
  size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, out.data() + start, static_cast<uInt>(out.size() - start));
  put32(out, static_cast<uint32_t>(crc));
}

/// An 8-bit RGB PNG of `rgb` (rows of width*3 bytes); empty on failure.
std::vector<unsigned char> png(const std::vector<unsigned char> &rgb,
                               int64_t width, int64_t height) {
  std::vector<unsigned char> raw;
  raw.reserve(size_t(height * (width * 3 + 1)));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back(0); // filter: none
    raw.insert(raw.end(), rgb.begin() + y * width * 3,
               rgb.begin() + (y + 1) * width * 3);
  }
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  std::vector<unsigned char> z(zlen);
  if (compress2(z.data(), &zlen, raw.data(), static_cast<uLong>(raw.size()),
                9) != Z_OK)
    return {};
  z.resize(zlen);
  std::vector<unsigned char> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a,
                                    '\n'};
  std::vector<unsigned char> ihdr;
  put32(ihdr, static_cast<uint32_t>(width));
  put32(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0}); // 8-bit RGB, no interlace
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  return out;
}

} // namespace

std::string heatmapSvg(const float *probs, int64_t heads, int64_t tq,
                       int64_t tkv, int64_t head,
                       const HeatmapOptions &options) {
  if (!probs || heads < 1 || tq < 1 || tkv < 1 || head >= heads)
    return "";
  std::vector<int64_t> panels;
  for (int64_t h = 0; h < heads; ++h)
    if (head < 0 || h == head)
      panels.push_back(h);

  // Cells: an axis longer than maxCells is averaged into maxCells blocks of
  // consecutive positions ([c*n/cells, (c+1)*n/cells), never empty).
  const int64_t most = std::max<int64_t>(options.maxCells, 1);
  const int64_t cq = std::min(tq, most), ck = std::min(tkv, most);
  const bool down = cq < tq || ck < tkv;
  // A masked cell is NaN in `cells` (every pair in it hidden by the mask).
  const bool masks = options.visible.size() == size_t(tq * tkv);
  auto seen = [&](int64_t i, int64_t j) {
    return !masks || options.visible[size_t(i * tkv + j)] != 0;
  };
  std::vector<std::vector<double>> cells;
  double vmax = 0;
  bool anyMasked = false;
  for (int64_t h : panels) {
    std::vector<double> c(size_t(cq * ck), 0.0);
    const float *ph = probs + h * tq * tkv;
    for (int64_t a = 0; a < cq; ++a) {
      const int64_t r0 = a * tq / cq, r1 = (a + 1) * tq / cq;
      for (int64_t b = 0; b < ck; ++b) {
        const int64_t k0 = b * tkv / ck, k1 = (b + 1) * tkv / ck;
        double sum = 0;
        int64_t visible = 0;
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = k0; j < k1; ++j)
            if (seen(i, j)) {
              sum += std::isfinite(ph[i * tkv + j]) ? ph[i * tkv + j] : 0.0;
              ++visible;
            }
        double v = visible ? sum / double(visible) : std::nan("");
        c[size_t(a * ck + b)] = v;
        if (visible)
          vmax = std::max(vmax, v);
        else
          anyMasked = true;
      }
    }
    cells.push_back(std::move(c));
  }
  if (!(vmax > 0))
    vmax = 1; // all zero: any scale shows that

  // Geometry. Square cells, a panel at most ~360 px on its long side and
  // cells at most 24 px.
  const double cell = std::min(24.0, 360.0 / double(std::max(cq, ck)));
  const double pw = cell * double(ck), ph = cell * double(cq);
  const double left = 64, top = 24, bottom = 44, right = 20;
  const double boxW = left + pw + right, boxH = top + ph + bottom;
  const int64_t n = int64_t(panels.size());
  const int64_t cols = std::max<int64_t>(1, int64_t(std::ceil(std::sqrt(double(n)))));
  const int64_t rows = (n + cols - 1) / cols;
  const double header = down ? 58 : 40;
  const double legendW = anyMasked ? 130 : 110; // room for "(not attended)"
  const double width = double(cols) * boxW + legendW;
  const double height =
      header + std::max(double(rows) * boxH, 260.0) + 10;

  std::string title = options.title;
  std::string detail = "query rows " + std::to_string(tq) + " x key columns " +
                       std::to_string(tkv) +
                       (head < 0 ? ", every head" : ", head " + std::to_string(head));
  std::string downNote;
  if (down) {
    const int64_t bq = (tq + cq - 1) / cq, bk = (tkv + ck - 1) / ck;
    downNote = "downsampled for display: " + std::to_string(cq) + " x " +
               std::to_string(ck) + " cells, each the mean of up to " +
               std::to_string(bq) + " x " + std::to_string(bk) + " weights";
  }

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" "
       "xmlns:xlink=\"http://www.w3.org/1999/xlink\" version=\"1.1\" width=\"" +
       fmt(width) + "\" height=\"" + fmt(height) + "\" viewBox=\"0 0 " +
       fmt(width) + " " + fmt(height) + "\" font-family=\"sans-serif\">\n";
  s += "<title>" + xmlEscape(title + ": " + detail +
                             (down ? " (" + downNote + ")" : "")) +
       "</title>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text class=\"title\" x=\"10\" y=\"20\" font-size=\"15\" "
       "font-weight=\"bold\">" +
       xmlEscape(title) + "</text>\n";
  s += "<text class=\"subtitle\" x=\"10\" y=\"36\" font-size=\"11\">" +
       xmlEscape(detail) + "</text>\n";
  if (down)
    s += "<text class=\"downsampled\" x=\"10\" y=\"51\" font-size=\"11\">" +
         xmlEscape(downNote) + "</text>\n";

  // Masked cells: hatched grey, a colour viridis never takes.
  if (anyMasked)
    s += "<defs><pattern id=\"masked\" width=\"6\" height=\"6\" "
         "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
         "<rect width=\"6\" height=\"6\" fill=\"" + hex(kMaskedLight) +
         "\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"" +
         hex(kMaskedDark) + "\" stroke-width=\"3\"/></pattern></defs>\n";
  const int64_t qStep = tickStep(tq, 8), kStep = tickStep(tkv, 8);
  const bool rects = cq * ck <= options.maxRectCells;
  const bool tooltips = cq * ck <= 256;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t h = panels[size_t(p)];
    const double ox = double(p % cols) * boxW + left;
    const double oy = header + double(p / cols) * boxH + top;
    s += "<g class=\"panel\" id=\"head" + std::to_string(h) +
         "\" transform=\"translate(" + fmt(ox) + "," + fmt(oy) + ")\">\n";
    s += "<text class=\"panel-title\" x=\"" + fmt(pw / 2) +
         "\" y=\"-8\" font-size=\"12\" text-anchor=\"middle\">head " +
         std::to_string(h) + "</text>\n";
    const std::vector<double> &c = cells[size_t(p)];
    if (rects) {
      for (int64_t a = 0; a < cq; ++a)
        for (int64_t b = 0; b < ck; ++b) {
          const double v = c[size_t(a * ck + b)];
          const bool masked = std::isnan(v);
          s += "<rect x=\"" + fmt(double(b) * cell) + "\" y=\"" +
               fmt(double(a) * cell) + "\" width=\"" + fmt(cell) +
               "\" height=\"" + fmt(cell) + "\" fill=\"" +
               (masked ? std::string("url(#masked)") : hex(colour(v / vmax))) + "\"";
          if (tooltips) {
            char buf[96];
            if (masked)
              std::snprintf(buf, sizeof buf, "query %lld, key %lld: masked",
                            (long long)a, (long long)b);
            else
              std::snprintf(buf, sizeof buf, "query %lld, key %lld: %.4g",
                            (long long)a, (long long)b, v);
            s += "><title>" + std::string(buf) + "</title></rect>\n";
          } else {
            s += "/>\n";
          }
        }
    } else {
      // Each cell as an f x f block of pixels, f >= the cell's size on
      // screen: viewers that smooth scaled images (ignoring
      // image-rendering) then blur only the cells' edges. Repeated pixels
      // cost little after deflate.
      const int64_t f = std::max<int64_t>(1, int64_t(std::ceil(cell)));
      const int64_t iw = ck * f, ih = cq * f;
      std::vector<unsigned char> rgb(size_t(iw * ih * 3));
      for (int64_t yy = 0; yy < ih; ++yy)
        for (int64_t xx = 0; xx < iw; ++xx) {
          const double v = c[size_t((yy / f) * ck + xx / f)];
          // Masked: diagonal stripes, 2 of every 6 pixels dark.
          Rgb col = !std::isnan(v)        ? colour(v / vmax)
                    : (xx + yy) % 6 < 2 ? kMaskedDark
                                          : kMaskedLight;
          unsigned char *px = &rgb[size_t((yy * iw + xx) * 3)];
          px[0] = col.r;
          px[1] = col.g;
          px[2] = col.b;
        }
      std::vector<unsigned char> image = png(rgb, iw, ih);
      if (image.empty())
        return "";
      s += "<image x=\"0\" y=\"0\" width=\"" + fmt(pw) + "\" height=\"" +
           fmt(ph) +
           "\" preserveAspectRatio=\"none\" image-rendering=\"optimizeSpeed\" "
           "style=\"image-rendering:pixelated\" xlink:href=\"data:image/png;base64," +
           base64(image) + "\"/>\n";
    }
    s += "<rect x=\"0\" y=\"0\" width=\"" + fmt(pw) + "\" height=\"" +
         fmt(ph) + "\" fill=\"none\" stroke=\"#444\" stroke-width=\"0.5\"/>\n";
    // Ticks at token positions (the centre of token t's row/column).
    const double qPx = ph / double(tq), kPx = pw / double(tkv);
    s += "<g class=\"yticks\" font-size=\"10\" text-anchor=\"end\">\n";
    for (int64_t t = 0; t < tq; t += qStep) {
      const double y = (double(t) + 0.5) * qPx;
      s += "<line x1=\"-4\" y1=\"" + fmt(y) + "\" x2=\"0\" y2=\"" + fmt(y) +
           "\" stroke=\"black\"/><text x=\"-6\" y=\"" + fmt(y + 3.5) + "\">" +
           std::to_string(t) + "</text>\n";
    }
    s += "</g>\n<g class=\"xticks\" font-size=\"10\" text-anchor=\"middle\">\n";
    for (int64_t t = 0; t < tkv; t += kStep) {
      const double x = (double(t) + 0.5) * kPx;
      s += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(ph) + "\" x2=\"" +
           fmt(x) + "\" y2=\"" + fmt(ph + 4) +
           "\" stroke=\"black\"/><text x=\"" + fmt(x) + "\" y=\"" +
           fmt(ph + 15) + "\">" + std::to_string(t) + "</text>\n";
    }
    s += "</g>\n";
    s += "<text class=\"xlabel\" x=\"" + fmt(pw / 2) + "\" y=\"" +
         fmt(ph + 32) +
         "\" font-size=\"11\" text-anchor=\"middle\">key position</text>\n";
    s += "<text class=\"ylabel\" transform=\"translate(-44," + fmt(ph / 2) +
         ") rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">query "
         "position</text>\n";
    s += "</g>\n";
  }

  // The colour scale: a vertical gradient, 0 at the bottom, vmax on top.
  const double lx = double(cols) * boxW + 16, ly = header + top;
  const double lh = std::min(220.0, std::max(120.0, ph));
  s += "<g class=\"legend\" transform=\"translate(" + fmt(lx) + "," + fmt(ly) +
       ")\">\n";
  s += "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" "
       "y2=\"0\">\n";
  for (int i = 0; i < kStops; ++i)
    s += "<stop offset=\"" + fmt(double(i) / (kStops - 1)) +
         "\" stop-color=\"" + hex(kViridis[i]) + "\"/>\n";
  s += "</linearGradient></defs>\n";
  s += "<text x=\"0\" y=\"-8\" font-size=\"11\">weight</text>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"16\" height=\"" + fmt(lh) +
       "\" fill=\"url(#scale)\" stroke=\"#444\" stroke-width=\"0.5\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = lh - lh * i / 4;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", vmax * i / 4);
    s += "<line x1=\"16\" y1=\"" + fmt(y) + "\" x2=\"20\" y2=\"" + fmt(y) +
         "\" stroke=\"black\"/><text class=\"scale-value\" x=\"23\" y=\"" +
         fmt(y + 3.5) + "\" font-size=\"10\">" + buf + "</text>\n";
  }
  if (anyMasked) {
    const double my = lh + 24;
    s += "<rect class=\"masked-key\" x=\"0\" y=\"" + fmt(my) +
         "\" width=\"16\" height=\"16\" fill=\"url(#masked)\" stroke=\"#444\" "
         "stroke-width=\"0.5\"/><text x=\"23\" y=\"" + fmt(my + 8) +
         "\" font-size=\"10\">masked</text><text x=\"23\" y=\"" + fmt(my + 20) +
         "\" font-size=\"10\">(not attended)</text>\n";
  }
  s += "</g>\n</svg>\n";
  return s;
}

bool writeHeatmapSvg(const std::string &path, const float *probs,
                     int64_t heads, int64_t tq, int64_t tkv, int64_t head,
                     const HeatmapOptions &options, std::string &message) {
  std::string svg = heatmapSvg(probs, heads, tq, tkv, head, options);
  if (svg.empty()) {
    message = path + ": cannot draw a heatmap of this shape";
    return false;
  }
  // All or nothing: a full disk leaves the previous file, never a 0-byte one.
  std::string why;
  bool ok = writeFileAtomically(
      path,
      [&](std::FILE *f) { return std::fwrite(svg.data(), 1, svg.size(), f) == svg.size(); },
      why);
  if (!ok)
    message = path + ": " + why;
  return ok;
}

} // namespace attnrt
