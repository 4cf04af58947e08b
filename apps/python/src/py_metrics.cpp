// The ranking metrics of core/metrics.h on numpy inputs: the same code that scores every
// evaluation of the engine and `hetsgd eval`, so Python and the command line agree exactly.
#include <pybind11/stl.h>

#include <string>

#include "apps/python/src/bindings.h"
#include "core/error.h"
#include "core/metrics.h"

namespace hetsgd::python {
namespace {

py::dict ranking(const Dataset& truth, const py::array& topk) {
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
  RankingMetrics m;
  {
    py::gil_scoped_release unlocked;
    accumulate_ranking(truth, static_cast<const col_t*>(topk.data()), k, &m);
    finish_ranking(&m);
  }
  py::dict r;
  py::list p, n;
  for (int i = 1; i <= 5; ++i) {
    p.append(m.p_at(i));
    n.append(m.ndcg_at(i));
  }
  r["precision"] = p;
  r["ndcg"] = n;
  r["rows"] = m.rows;
  return r;
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def("ranking_metrics", &ranking, py::arg("truth"), py::arg("topk"),
        "P@1..5 and nDCG@1..5 (lists) of int32 top-k predictions against truth's labels");
}

}  // namespace hetsgd::python
