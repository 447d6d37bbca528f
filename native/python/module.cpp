// treescore_native: the scorer core for Python, so that the tests and benchmarks run the very
// code the executors run. dev/build installs it into the project's venv; the user's wheel is
// pure Python and does not carry it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "../src/booster.h"
#include "../src/engine_predictor.h"
#include "../src/lightgbm_error.h"

namespace py = pybind11;
using treescore::Booster;
using treescore::IterationRange;
using treescore::PredictKind;

namespace {

PredictKind KindFromName(const std::string& name) {
  if (name == "prediction") return PredictKind::kPrediction;
  if (name == "raw") return PredictKind::kRaw;
  if (name == "leaf") return PredictKind::kLeaf;
  if (name == "contrib") return PredictKind::kContrib;
  throw py::value_error("kind must be one of prediction, raw, leaf, contrib; got '" + name + "'");
}

// Scores with either engine (Booster or EnginePredictor): the same Predictor calls the JVM makes.
template <typename Model>
py::array_t<double> Predict(const Model& model,
                            py::array_t<double, py::array::c_style | py::array::forcecast> rows,
                            const std::string& kind_name, int start_iteration, int num_iterations, int num_threads) {
  if (rows.ndim() != 2) throw py::value_error("rows must be a 2-d array");
  const PredictKind kind = KindFromName(kind_name);
  const IterationRange range{start_iteration, num_iterations};
  const auto num_rows = static_cast<int32_t>(rows.shape(0));
  const auto num_cols = static_cast<int32_t>(rows.shape(1));
  const int64_t per_row = model.OutputsPerRow(kind, range);
  py::array_t<double> out({static_cast<py::ssize_t>(num_rows), static_cast<py::ssize_t>(per_row)});
  const double* in_data = rows.data();
  double* out_data = out.mutable_data();
  {
    py::gil_scoped_release release;
    model.Predict(in_data, num_rows, num_cols, kind, range, num_threads, out_data, static_cast<int64_t>(num_rows) * per_row);
  }
  return out;
}

// A what-if grid with either engine: rows (base rows x features), the varying features, and
// values[r, k, v], point k of row r's value for varying[v]; returns (rows, points, outputs).
template <typename Model>
py::array_t<double> PredictGrid(const Model& model,
                                py::array_t<double, py::array::c_style | py::array::forcecast> rows,
                                const std::vector<int32_t>& varying,
                                py::array_t<double, py::array::c_style | py::array::forcecast> values,
                                const std::string& kind_name, int start_iteration, int num_iterations, int num_threads) {
  if (rows.ndim() != 2) throw py::value_error("rows must be a 2-d array");
  if (values.ndim() != 3 || values.shape(0) != rows.shape(0) || values.shape(2) != static_cast<py::ssize_t>(varying.size())) {
    throw py::value_error("values must have shape (rows, points, len(varying))");
  }
  const PredictKind kind = KindFromName(kind_name);
  const IterationRange range{start_iteration, num_iterations};
  const auto num_rows = static_cast<int32_t>(rows.shape(0));
  const auto num_cols = static_cast<int32_t>(rows.shape(1));
  const treescore::GridPoints grid{static_cast<int>(values.shape(1)), varying, values.data()};
  const int64_t per_row = model.OutputsPerRow(kind, range);
  py::array_t<double> out({static_cast<py::ssize_t>(num_rows), static_cast<py::ssize_t>(grid.points),
                           static_cast<py::ssize_t>(per_row)});
  const double* in_data = rows.data();
  double* out_data = out.mutable_data();
  {
    py::gil_scoped_release release;
    model.PredictGrid(in_data, num_rows, num_cols, grid, kind, range, num_threads, out_data,
                      static_cast<int64_t>(num_rows) * grid.points * per_row);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(treescore_native, m) {
  m.doc() = "treescore's native scorer core (the same code the JVM calls through JNI).";
  py::register_exception<treescore::LightGbmError>(m, "LightGbmError", PyExc_RuntimeError);

  py::class_<Booster>(m, "Booster")
      .def(py::init([](const std::string& text) { return Booster::FromModelText(text); }), py::arg("model_text"),
           "Loads a model from LightGBM's text format.")
      .def_property_readonly("num_features", &Booster::num_features)
      .def_property_readonly("num_classes", &Booster::num_classes)
      .def("predict", &Predict<Booster>, py::arg("rows"), py::arg("kind") = "prediction", py::arg("start_iteration") = 0,
           py::arg("num_iterations") = -1, py::arg("num_threads") = 1,
           "Scores a 2-d float64 array; returns an array of shape (rows, outputs per row).")
      .def("predict_grid", &PredictGrid<Booster>, py::arg("rows"), py::arg("varying"), py::arg("values"),
           py::arg("kind") = "prediction", py::arg("start_iteration") = 0, py::arg("num_iterations") = -1,
           py::arg("num_threads") = 1,
           "Scores every point of a what-if grid: values[r, k, v] replaces feature varying[v] of row r at point k; "
           "returns shape (rows, points, outputs per row).");

  // std::invalid_argument (a model the engine cannot read or evaluate) becomes ValueError.
  using treescore::EnginePredictor;
  py::class_<EnginePredictor>(m, "ExactScorer")
      .def(py::init([](const std::string& text, const std::string& layout, const std::string& simd,
                       int64_t max_table_addends) {
             using treescore::engine::Layout;
             using treescore::engine::Simd;
             const Layout chosen = layout == "auto" ? Layout::kAuto
                                   : layout == "node walk" ? Layout::kNodeWalk
                                   : layout == "quickscorer" ? Layout::kQuickScorer
                                   : throw py::value_error("layout must be auto, node walk or quickscorer; got '" + layout + "'");
             const Simd level = simd == "best" ? treescore::engine::BestSimd() : treescore::engine::ParseSimd(simd);
             if (max_table_addends < 0) throw py::value_error("max_table_addends must be at least 0");
             return EnginePredictor::FromModelText(text, chosen, level, static_cast<size_t>(max_table_addends));
           }),
           py::arg("model_text"), py::arg("layout") = "auto", py::arg("simd") = "best",
           py::arg("max_table_addends") = static_cast<int64_t>(treescore::engine::TreeShap::kMaxTableAddends),
           "treescore's own exact engine, built from LightGBM's text format (the engine executors run). "
           "simd: the instruction set its vector code runs on, this CPU's best unless a test asks for a lower one. "
           "max_table_addends: at most what TreeSHAP's tables keep (the wire limit at most); other leaves replay.")
      .def_property_readonly("layout", [](const EnginePredictor& p) { return p.scorer().layout_name(); })
      .def_property_readonly("simd", [](const EnginePredictor& p) { return p.scorer().simd_name(); })
      .def_property_readonly("leaf_set_bits", [](const EnginePredictor& p) { return p.scorer().leaf_set_bits(); })
      .def("shap_tables",
           [](const EnginePredictor& p) {
             const auto stats = p.scorer().ShapTableStats();
             py::dict out;
             out["leaves"] = stats.leaves;
             out["replayed_leaves"] = stats.replayed_leaves;
             out["table_addends"] = stats.table_addends;
             return out;
           },
           "What TreeSHAP's tables hold (built on first use): leaves, replayed_leaves, table_addends.")
      .def_property_readonly("num_features", &EnginePredictor::num_features)
      .def_property_readonly("num_classes", &EnginePredictor::num_classes)
      .def("predict", &Predict<EnginePredictor>, py::arg("rows"), py::arg("kind") = "prediction",
           py::arg("start_iteration") = 0, py::arg("num_iterations") = -1, py::arg("num_threads") = 1,
           "Scores a 2-d float64 array without LightGBM; bit-identical to Booster.predict.")
      .def("predict_grid", &PredictGrid<EnginePredictor>, py::arg("rows"), py::arg("varying"), py::arg("values"),
           py::arg("kind") = "prediction", py::arg("start_iteration") = 0, py::arg("num_iterations") = -1,
           py::arg("num_threads") = 1,
           "A what-if grid as Booster.predict_grid gives it, sharing the work on the features that do not vary.");
  m.def("simd_levels",
        [] {
          std::vector<std::string> names;
          for (auto level : treescore::engine::SimdLevelsUpTo(treescore::engine::BestSimd())) {
            names.push_back(treescore::engine::SimdName(level));
          }
          return names;
        },
        "The instruction sets this CPU runs the engine's vector code on (QuickScorer's and the node walk's), "
        "lowest first: the last is what ExactScorer picks by default.");
}
