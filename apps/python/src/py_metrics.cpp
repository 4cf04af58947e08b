// The ranking metrics of core/metrics.h on numpy inputs: the same code that scores every
// evaluation of the engine and `hetsgd eval`, so Python and the command line agree exactly.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "apps/python/src/bindings.h"
#include "core/error.h"
#include "core/metrics.h"

namespace hetsgd::python {
namespace {

py::dict ranking(const Dataset& truth, const py::array& topk,
                 std::optional<py::array_t<float, py::array::c_style>> inv_propensity) {
  HETSGD_CHECK(topk.ndim() == 2,
               "predicted labels have " << topk.ndim() << " dimensions, expected 2 (rows x k)");
  HETSGD_CHECK(topk.dtype().kind() == 'i' && topk.itemsize() == 4,
               "predicted labels have dtype " << py::str(topk.dtype()).cast<std::string>()
                                              << ": expected int32");
  HETSGD_CHECK(topk.shape(0) == truth.rows(),
               "predicted labels have " << topk.shape(0) << " rows, the truth " << truth.rows());
  HETSGD_CHECK(topk.flags() & py::array::c_style, "predicted labels are not C-contiguous");
  const int k = static_cast<int>(topk.shape(1));
  HETSGD_CHECK(k >= 1, "predicted labels have no column");
  std::vector<float> inv;
  if (inv_propensity) {
    HETSGD_CHECK(
        inv_propensity->ndim() == 1 && inv_propensity->size() >= truth.num_labels,
        "propensity has " << inv_propensity->size() << " entries, expected " << truth.num_labels);
    inv.assign(inv_propensity->data(), inv_propensity->data() + inv_propensity->size());
  }
  RankingMetrics m;
  {
    py::gil_scoped_release unlocked;
    accumulate_ranking(truth, static_cast<const col_t*>(topk.data()), k, &m,
                       inv_propensity ? &inv : nullptr);
    finish_ranking(&m);
  }
  py::dict r;
  py::list p, n, rc, ps, pn;
  for (int i = 1; i <= 5; ++i) {
    p.append(m.p_at(i));
    n.append(m.ndcg_at(i));
    rc.append(m.recall_at(i));
    ps.append(m.psp_at(i));
    pn.append(m.psndcg_at(i));
  }
  r["precision"] = p;
  r["ndcg"] = n;
  r["recall"] = rc;
  if (m.has_propensity != 0) {
    r["psp"] = ps;
    r["psndcg"] = pn;
  }
  r["rows"] = m.rows;
  return r;
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def("ranking_metrics", &ranking, py::arg("truth"), py::arg("topk"),
        py::arg("inv_propensity") = py::none(),
        "P@1..5, nDCG@1..5, recall@1..5 (and PSP, PSnDCG with inverse propensities) of int32 "
        "top-k predictions against truth's labels");
  m.def(
      "inverse_propensities",
      [](const Dataset& train, double a, double b) {
        const std::vector<float> v = inverse_propensities(train, PropensityModel{a, b});
        HETSGD_CHECK(!v.empty(),
                     "inverse propensities need at least 2 training rows, got " << train.rows());
        py::array_t<float> out(static_cast<py::ssize_t>(v.size()));
        std::copy(v.begin(), v.end(), out.mutable_data());
        return out;
      },
      py::arg("train"), py::arg("a") = 0.55, py::arg("b") = 1.5,
      "1/p_l of every label from the training labels (core/metrics.h)");
}

}  // namespace hetsgd::python
