#include "forest.h"

namespace treescore {
namespace model {

Forest Forest::Slice(size_t first_tree, size_t num_trees) const {
  Forest part;
  part.num_features = num_features;
  part.num_classes = num_classes;
  part.trees_per_iteration = trees_per_iteration;
  part.average_output = average_output;
  part.base_score = base_score;
  part.transform = transform;
  part.sigmoid = sigmoid;
  part.input_reading = input_reading;
  part.has_covers = has_covers;
  const auto begin = trees.begin() + static_cast<std::ptrdiff_t>(first_tree);
  part.trees.assign(begin, begin + static_cast<std::ptrdiff_t>(num_trees));
  part.features_read = FeaturesRead(part.trees, num_features);
  return part;
}

bool Forest::has_linear_trees() const {
  for (const Tree& tree : trees) {
    if (tree.is_linear()) return true;
  }
  return false;
}

std::vector<int> FeaturesRead(const std::vector<Tree>& trees, int num_features) {
  std::vector<bool> read(static_cast<size_t>(num_features));
  for (const Tree& tree : trees) {
    tree.ForEachFeatureRead([&](int f) { read[static_cast<size_t>(f)] = true; });
  }
  std::vector<int> features;
  for (size_t f = 0; f < read.size(); ++f) {
    if (read[f]) features.push_back(static_cast<int>(f));
  }
  return features;
}

}  // namespace model
}  // namespace treescore
