#include "top_k/selector.h"

namespace treescore {

TopKSelector::TopKSelector(RankedScore score, TopKQuery query)
    : score_(std::move(score)), query_(query), schedule_(score_.members()), leaderboard_(query.k) {}

int32_t TopKSelector::Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept,
                             double* scores, const int32_t* routes) {
  BatchSelection batch(score_, schedule_, query_.descending, &leaderboard_, rows, groups, floor, routes, &buffers_);
  const int32_t count = batch.Run(kept, scores);
  trees_evaluated_ += batch.trees_evaluated();
  trees_in_full_ += batch.trees_in_full();
  return count;
}

}  // namespace treescore
