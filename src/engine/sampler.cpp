#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace channel {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

namespace {

// The order candidates are ranked in: higher logit first, the lower id among equals.
bool better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> masked, std::span<const int32_t> recent) {
  const SamplerOptions& o = options_;
  const bool neutral_penalties = o.repeat_penalty == 1.0f && o.frequency_penalty == 0.0f && o.presence_penalty == 0.0f;
  if (o.temperature <= 0.0f && masked.empty() && (neutral_penalties || recent.empty())) return argmax(logits);
  collect_candidates(logits, masked, neutral_penalties ? std::span<const int32_t>() : recent);
  if (candidates_.empty()) return argmax(logits);  // everything masked: nothing better to do
  if (o.temperature <= 0.0f) return candidates_.front().second;

  // Softmax at the temperature (values become probabilities, unnormalized).
  const float max_logit = candidates_.front().first;
  double total = 0.0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / o.temperature);
    total += value;
  }
  // min-p: keep the leading run with p >= p_max * min_p.
  size_t n = candidates_.size();
  if (o.min_p > 0.0f) {
    const double floor = candidates_.front().first * o.min_p;
    n = 1;
    while (n < candidates_.size() && candidates_[n].first >= floor) ++n;
    total = 0.0;
    for (size_t i = 0; i < n; ++i) total += candidates_[i].first;
  }
  // top-p: the smallest prefix holding top_p of the mass.
  double kept = 0.0;
  size_t n_kept = 0;
  while (n_kept < n) {
    kept += candidates_[n_kept].first;
    ++n_kept;
    if (kept >= o.top_p * total) break;
  }
  std::uniform_real_distribution<double> uniform(0.0, kept);
  double r = uniform(rng_);
  for (size_t i = 0; i < n_kept; ++i) {
    r -= candidates_[i].first;
    if (r <= 0.0) return candidates_[i].second;
  }
  return candidates_[n_kept - 1].second;
}

void Sampler::collect_candidates(std::span<const float> logits, std::span<const int32_t> masked,
                                 std::span<const int32_t> recent) {
  const SamplerOptions& o = options_;
  const auto in_vocabulary = [&](int32_t token) { return token >= 0 && static_cast<size_t>(token) < logits.size(); };
  // Occurrences of each token of the penalty window (at most repeat_last_n of them), in room for
  // a whole window from the first step on (capped: a larger window grows as it fills).
  constexpr size_t kMaxReservedWindow = 4096;
  counts_.clear();
  counts_.reserve(std::min<size_t>(static_cast<size_t>(std::max(0, o.repeat_last_n)), kMaxReservedWindow));
  const size_t window = std::min<size_t>(recent.size(), static_cast<size_t>(std::max(0, o.repeat_last_n)));
  for (int32_t token : recent.subspan(recent.size() - window)) {
    if (!in_vocabulary(token)) continue;
    auto it = std::find_if(counts_.begin(), counts_.end(), [&](const auto& c) { return c.first == token; });
    if (it == counts_.end()) {
      counts_.emplace_back(token, 1);
    } else {
      ++it->second;
    }
  }
  // top_k <= 0 keeps every candidate; otherwise a heap holds the best k so far, its worst on top,
  // so that most ids cost one comparison with it.
  const size_t k = o.top_k > 0 ? static_cast<size_t>(o.top_k) : logits.size();
  candidates_.clear();
  const auto offer = [&](float value, int32_t token) {
    if (candidates_.size() < k) {
      candidates_.emplace_back(value, token);
      std::push_heap(candidates_.begin(), candidates_.end(), better);
    } else if (better({value, token}, candidates_.front())) {
      std::pop_heap(candidates_.begin(), candidates_.end(), better);
      candidates_.back() = {value, token};
      std::push_heap(candidates_.begin(), candidates_.end(), better);
    }
  };
  // Masked and penalized ids are set aside: the pass below meets them only through `excluded_`.
  // Penalized ids that are not masked are offered first, with their penalized logits.
  excluded_.resize(std::max(excluded_.size(), logits.size()));
  for (int32_t token : masked) {
    if (in_vocabulary(token)) excluded_[token] = 1;
  }
  for (const auto& [token, count] : counts_) {
    if (excluded_[token]) continue;  // masked
    float value = logits[token];
    value = value > 0 ? value / o.repeat_penalty : value * o.repeat_penalty;
    value -= o.presence_penalty + static_cast<float>(count) * o.frequency_penalty;
    offer(value, token);
  }
  for (const auto& [token, count] : counts_) excluded_[token] = 1;
  // Blocks of ids none of whose logits reaches the worst kept one are passed over whole (a
  // comparison the compiler vectorizes).
  constexpr size_t kBlock = 64;
  for (size_t first = 0; first < logits.size(); first += kBlock) {
    const size_t last = std::min(logits.size(), first + kBlock);
    if (candidates_.size() == k) {
      const float worst = candidates_.front().first;
      bool reaches = false;
      for (size_t i = first; i < last; ++i) reaches |= logits[i] >= worst;
      if (!reaches) continue;
    }
    for (size_t i = first; i < last; ++i) {
      const auto token = static_cast<int32_t>(i);
      if (candidates_.size() == k && !better({logits[i], token}, candidates_.front())) continue;
      if (!excluded_[i]) offer(logits[i], token);
    }
  }
  std::sort_heap(candidates_.begin(), candidates_.end(), better);

  for (int32_t token : masked) {
    if (in_vocabulary(token)) excluded_[token] = 0;
  }
  for (const auto& [token, count] : counts_) excluded_[token] = 0;
}

}  // namespace channel
