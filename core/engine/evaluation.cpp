#include "core/engine/evaluation.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace hetsgd {

RankingMetrics evaluate(Device& device, const Dataset& test, int k, index_t batch_rows,
                        index_t max_points) {
  HETSGD_CHECK(k >= 1, "evaluate: k " << k << " < 1");
  HETSGD_CHECK(batch_rows >= 1, "evaluate: batch_rows " << batch_rows << " < 1");
  const index_t rows = max_points > 0 ? std::min(max_points, test.rows()) : test.rows();
  RankingMetrics m;
  CsrBatch batch;
  std::vector<col_t> labels;
  std::vector<float> scores;
  double loss_sum = 0.0;
  for (index_t begin = 0; begin < rows; begin += batch_rows) {
    const index_t end = std::min(rows, begin + batch_rows);
    slice_rows(test, begin, end, &batch);
    labels.resize(static_cast<size_t>((end - begin) * k));
    scores.resize(labels.size());
    const float loss = device.predict_topk(batch, k, labels.data(), scores.data());
    loss_sum += static_cast<double>(loss) * static_cast<double>(end - begin);
    accumulate_ranking(batch, labels.data(), k, &m);
  }
  finish_ranking(&m);
  m.loss = rows > 0 ? loss_sum / static_cast<double>(rows) : 0.0;
  return m;
}

}  // namespace hetsgd
