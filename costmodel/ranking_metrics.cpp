#include "costmodel/ranking_metrics.h"

#include "base/error.h"

namespace kiln {

double pairwise_accuracy(const std::vector<float>& predicted, const std::vector<float>& actual) {
  user_check(predicted.size() == actual.size())
      << "pairwise_accuracy: " << predicted.size() << " predictions for " << actual.size() << " measurements";
  double right = 0;
  long long pairs = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    for (size_t j = i + 1; j < actual.size(); ++j) {
      if (actual[i] == actual[j]) continue;
      ++pairs;
      if (predicted[i] == predicted[j]) {
        right += 0.5;
      } else if ((predicted[i] < predicted[j]) == (actual[i] < actual[j])) {
        right += 1;
      }
    }
  return pairs == 0 ? 0.5 : right / static_cast<double>(pairs);
}

}  // namespace kiln
