// The order top-K selection runs its members' stages in, and what a batch must hold for them:
// round-robin (every member's first stage, then every second, ...), so that every member has
// been scored a little before any row is judged.
#pragma once

#include <cstdint>
#include <vector>

#include "top_k/staged_model.h"

namespace treescore {

class StageSchedule {
 public:
  struct Step {
    size_t member;
    size_t stage;
  };

  explicit StageSchedule(const std::vector<StagedModel>& members);

  const std::vector<Step>& steps() const { return steps_; }
  // After steps [0, step): how many stages of each member are done.
  const std::vector<size_t>& DoneAfter(size_t step) const { return done_after_[step]; }
  // Steps in the first round: one per member.
  size_t first_round() const { return first_round_; }
  // The batch columns some member's trees read, ascending, and how many columns a batch needs.
  const std::vector<int32_t>& read_columns() const { return read_columns_; }
  int32_t needed_columns() const { return needed_columns_; }
  // A row's bins for the members' rest bounds: member m's start at first_bin(m) of bins_per_row().
  size_t first_bin(size_t m) const { return first_bin_[m]; }
  size_t bins_per_row() const { return bins_per_row_; }

 private:
  std::vector<Step> steps_;
  std::vector<std::vector<size_t>> done_after_;
  size_t first_round_ = 0;
  std::vector<int32_t> read_columns_;
  int32_t needed_columns_ = 0;
  std::vector<size_t> first_bin_;
  size_t bins_per_row_ = 0;
};

}  // namespace treescore
