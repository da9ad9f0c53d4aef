//===- LayerBalance.cpp - transformer layers per pipeline chunk -----------===//

#include "dialects/Dist/Transforms/LayerBalance.h"

#include <algorithm>
#include <limits>

std::vector<int64_t>
mlir::dist::pipeline::balanceLayers(const std::vector<double> &layerCosts,
                                    double before, double after,
                                    int64_t chunks) {
  int64_t n = static_cast<int64_t>(layerCosts.size());
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + layerCosts[i];
  auto cost = [&](int64_t chunk, int64_t from, int64_t to) {
    double c = prefix[to] - prefix[from];
    if (chunk == 0)
      c += before;
    if (chunk == chunks - 1)
      c += after;
    return c;
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[c][i]: the smallest largest cost of chunks 0..c over layers [0, i).
  std::vector<std::vector<double>> best(chunks,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int64_t>> cut(chunks, std::vector<int64_t>(n + 1));
  for (int64_t i = 1; i <= n; ++i)
    best[0][i] = cost(0, 0, i);
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t i = c + 1; i <= n; ++i)
      for (int64_t j = c; j < i; ++j) {
        if (best[c - 1][j] == kInf)
          continue;
        double worst = std::max(best[c - 1][j], cost(c, j, i));
        if (worst < best[c][i]) {
          best[c][i] = worst;
          cut[c][i] = j;
        }
      }
  std::vector<int64_t> counts(chunks);
  for (int64_t c = chunks - 1, end = n; c >= 0; --c) {
    int64_t begin = c == 0 ? 0 : cut[c][end];
    counts[c] = end - begin;
    end = begin;
  }
  return counts;
}
