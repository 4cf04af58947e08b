// Model for Python: predict (top-k labels and scores as numpy arrays), evaluate, save, load.
// The file format is the command line's (core/model/model_io.h).
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>

#include "apps/cli_common.h"
#include "apps/python/src/bindings.h"
#include "apps/python/src/model_handle.h"
#include "apps/report.h"
#include "core/engine/evaluation.h"
#include "core/error.h"
#include "kernels/replicas.h"

namespace hetsgd::python {

Ranker& ModelHandle::ranker(const std::string& spec, int threads) {
  const std::string key = spec + "/" + std::to_string(threads);
  if (!loaded_.ranker || key != device_key_) {
    app::DeviceArgs da;
    da.devices = spec;
    da.threads = threads;
    auto [ids, opts] = app::resolve_device_args(da);
    opts.scoring_only = true;
    HETSGD_CHECK(ids.size() == 1, "device '" << spec << "': one device, got " << ids.size());
    loaded_ = LoadedRanker{};
    loaded_ = load_ranker(model_, [&, &ids = ids, &opts = opts](const ModelConfig& c) {
      return std::move(make_replicas(ids, c, opts).front());
    });
    device_key_ = key;
  }
  return *loaded_.ranker;
}

namespace {

using Handle = std::shared_ptr<ModelHandle>;

// The model's shape against the data's: same label space (when the data has labels), and no
// feature beyond the model's (a narrower matrix is read at the model's width).
void check_fits(const ModelConfig& c, const Dataset& d, const std::string& what) {
  HETSGD_CHECK(d.num_features <= c.num_features,
               what << " has " << d.num_features << " features, the model " << c.num_features);
  HETSGD_CHECK(d.label_nnz() == 0 || d.num_labels == c.num_labels,
               what << " has " << d.num_labels << " labels, the model " << c.num_labels);
}

py::tuple predict(const Handle& h, const Dataset& data, int k, const std::string& device,
                  int threads, index_t batch_rows) {
  HETSGD_CHECK(k >= 1 && k <= 1000, "-k " << k << " outside [1, 1000]");
  HETSGD_CHECK(batch_rows >= 1, "batch_rows " << batch_rows << " < 1");
  const ModelConfig& c = h->saved().config;
  check_fits(c, data, "X");
  k = static_cast<int>(std::min<index_t>(k, c.num_labels));
  const auto n = static_cast<py::ssize_t>(data.rows());
  py::array_t<col_t> labels({n, static_cast<py::ssize_t>(k)});
  py::array_t<float> scores({n, static_cast<py::ssize_t>(k)});
  col_t* lp = labels.mutable_data();
  float* sp = scores.mutable_data();
  {
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> held(h->lock());
    Ranker& dev = h->ranker(device, threads);
    CsrBatch batch;
    for (index_t begin = 0; begin < data.rows(); begin += batch_rows) {
      const index_t end = std::min(data.rows(), begin + batch_rows);
      slice_rows(data, begin, end, &batch);
      batch.num_features = c.num_features;
      batch.num_labels = c.num_labels;
      dev.predict_topk(batch, k, lp + begin * k, sp + begin * k);
    }
  }
  return py::make_tuple(labels, scores);
}

std::string evaluate_json(const Handle& h, const Dataset& data, int k, const std::string& device,
                          int threads) {
  const ModelConfig& c = h->saved().config;
  HETSGD_CHECK(data.num_labels == c.num_labels,
               "data has " << data.num_labels << " labels, the model " << c.num_labels);
  check_fits(c, data, "data");
  RankingMetrics m;
  {
    py::gil_scoped_release unlocked;
    Dataset widened = data;  // the device reads rows at the model's width
    widened.num_features = c.num_features;
    std::lock_guard<std::mutex> held(h->lock());
    m = evaluate(h->ranker(device, threads), widened, std::max(5, k), 2048);
  }
  nlohmann::json j = app::metrics_to_json(m);
  j["rows"] = m.rows;
  return j.dump();
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<ModelHandle, Handle>(m, "Model")
      .def_property_readonly("num_features",
                             [](const Handle& h) { return h->saved().config.num_features; })
      .def_property_readonly("num_labels",
                             [](const Handle& h) { return h->saved().config.num_labels; })
      .def_property_readonly("hidden", [](const Handle& h) { return h->saved().config.hidden; })
      .def_property_readonly(
          "loss", [](const Handle& h) { return std::string(to_string(h->saved().config.loss)); })
      .def_property_readonly("num_params", [](const Handle& h) { return h->saved().params.size(); })
      .def("parameters",
           [](const Handle& h) {
             const std::vector<float>& p = h->saved().params;
             py::array_t<float> a(static_cast<py::ssize_t>(p.size()));
             std::copy(p.begin(), p.end(), a.mutable_data());
             return a;
           })
      .def("predict", &predict, py::arg("data"), py::arg("k"), py::arg("device") = "cpu",
           py::arg("threads") = 0, py::arg("batch_rows") = 2048)
      .def("evaluate", &evaluate_json, py::arg("data"), py::arg("k") = 5, py::arg("device") = "cpu",
           py::arg("threads") = 0)
      .def(
          "save",
          [](const Handle& h, const std::string& path) {
            py::gil_scoped_release unlocked;
            save_model(path, h->saved());
          },
          py::arg("path"));
  m.def(
      "load_model",
      [](const std::string& path) {
        SavedModel s;
        {
          py::gil_scoped_release unlocked;
          s = load_model(path);
        }
        return std::make_shared<ModelHandle>(std::move(s));
      },
      py::arg("path"));
}

}  // namespace hetsgd::python
