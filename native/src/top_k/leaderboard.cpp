#include "top_k/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace treescore {

Leaderboard::Leaderboard(int k) : k_(k) {
  if (k < 1) throw std::invalid_argument("top-K needs k of 1 or more, got " + std::to_string(k));
}

void Leaderboard::Reach(int32_t group) {
  if (static_cast<size_t>(group) >= best_.size()) best_.resize(static_cast<size_t>(group) + 1);
}

double Leaderboard::Bar(int32_t group, double floor) const {
  const std::vector<double>& best = best_[static_cast<size_t>(group)];
  return static_cast<int>(best.size()) < k_ ? floor : std::max(floor, best.front());
}

bool Leaderboard::Offer(int32_t group, double key) {
  if (std::isnan(key)) return true;
  std::vector<double>& best = best_[static_cast<size_t>(group)];
  if (static_cast<int>(best.size()) < k_) {
    best.push_back(key);
    std::push_heap(best.begin(), best.end(), std::greater<double>());
    return true;
  }
  if (key > best.front()) {
    std::pop_heap(best.begin(), best.end(), std::greater<double>());
    best.back() = key;
    std::push_heap(best.begin(), best.end(), std::greater<double>());
    return true;
  }
  return key == best.front();
}

}  // namespace treescore
