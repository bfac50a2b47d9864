// Summaries of repeated measurements: what a benchmark reports for each figure.
#pragma once

#include <vector>

namespace channel {

struct Summary {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  int count = 0;
};

// Median (mean of the middle two for an even count), minimum and maximum; all zero when empty.
Summary summarize(std::vector<double> samples);

}  // namespace channel
