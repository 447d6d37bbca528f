#include "top_k/stage_schedule.h"

#include <algorithm>

namespace treescore {

StageSchedule::StageSchedule(const std::vector<StagedModel>& members) : first_round_(members.size()) {
  std::vector<bool> read;  // by batch column
  size_t most_stages = 0;
  for (const StagedModel& member : members) {
    member.MarkColumnsRead(&read);
    for (int f = 0; f < member.num_features(); ++f) needed_columns_ = std::max(needed_columns_, member.Column(f) + 1);
    most_stages = std::max(most_stages, member.num_stages());
    first_bin_.push_back(bins_per_row_);
    bins_per_row_ += member.bin_columns().size();
  }
  for (size_t c = 0; c < read.size(); ++c) {
    if (read[c]) read_columns_.push_back(static_cast<int32_t>(c));
  }
  done_after_.push_back(std::vector<size_t>(members.size(), 0));
  for (size_t s = 0; s < most_stages; ++s) {
    for (size_t m = 0; m < members.size(); ++m) {
      if (s >= members[m].num_stages()) continue;
      steps_.push_back(Step{m, s});
      done_after_.push_back(done_after_.back());
      done_after_.back()[m] = s + 1;
    }
  }
}

}  // namespace treescore
