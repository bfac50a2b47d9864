#include "benchmark/statistics.h"

#include <algorithm>

namespace channel {

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.count = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2.0;
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

}  // namespace channel
