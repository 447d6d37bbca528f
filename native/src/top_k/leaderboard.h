// Per group, the best keys a top-K query has seen: at most k of them, kept from batch to batch.
// A row is kept when its key reaches its group's bar; a tie with the k-th is kept.
#pragma once

#include <cstdint>
#include <vector>

namespace treescore {

class Leaderboard {
 public:
  // Throws std::invalid_argument for k below 1.
  explicit Leaderboard(int k);

  int k() const { return k_; }
  size_t num_groups() const { return best_.size(); }
  // Makes room for groups 0..group.
  void Reach(int32_t group);
  // How many keys the group holds (at most k).
  size_t Held(int32_t group) const { return best_[static_cast<size_t>(group)].size(); }
  // The key a row must reach to be kept in `group`: the k-th best so far (-inf until k are
  // known), or `floor` where that is higher.
  double Bar(int32_t group, double floor) const;
  // Records a fully scored row's key; returns whether it is kept. A NaN key is kept and bars nothing.
  bool Offer(int32_t group, double key);
  // Group 0's best keys (at most k, in no order).
  std::vector<double> BestKeys() const { return best_.empty() ? std::vector<double>() : best_.front(); }

 private:
  int k_;
  std::vector<std::vector<double>> best_;  // per group, a min-heap
};

}  // namespace treescore
