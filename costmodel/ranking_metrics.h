// Ranking quality of a cost model's predictions against measured scores.
#pragma once

#include <vector>

namespace kiln {

// The share of pairs (i, j) with actual[i] != actual[j] that `predicted`
// orders the same way (higher is better in both); a predicted tie counts as
// half right. With no such pair the result is 0.5 (no information).
// user_error when the sizes differ.
double pairwise_accuracy(const std::vector<float>& predicted, const std::vector<float>& actual);

}  // namespace kiln
