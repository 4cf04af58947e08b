// The `_hetsgd` extension module: error translation and the registration of its parts.
#include <pybind11/pybind11.h>

#include "apps/python/src/bindings.h"
#include "core/error.h"
#include "kernels/registry.h"

namespace hetsgd::python {
namespace {

// The Python classes live in hetsgd/_errors.py so that they can derive from two bases
// (hetsgd.InvalidArgument is a ValueError too); pybind11's register_exception takes one.
void raise_as(const char* name, const char* what) {
  py::object cls = py::module_::import("hetsgd._errors").attr(name);
  PyErr_SetString(cls.ptr(), what);
}

void translate(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const UsageError& e) {
    raise_as("UsageError", e.what());
  } catch (const InvalidArgument& e) {
    raise_as("InvalidArgument", e.what());
  } catch (const IoError& e) {
    raise_as("IoError", e.what());
  } catch (const DeviceUnavailable& e) {
    raise_as("DeviceUnavailable", e.what());
  } catch (const NumericalError& e) {
    raise_as("NumericalError", e.what());
  } catch (const Error& e) {
    raise_as("Error", e.what());
  }
}

}  // namespace
}  // namespace hetsgd::python

PYBIND11_MODULE(_hetsgd, m) {
  namespace hp = hetsgd::python;
  m.doc() = "hetsgd's C++ core (use the `hetsgd` package, which wraps it)";
  pybind11::register_exception_translator(&hp::translate);
  m.def("build_info", &hetsgd::build_info, "version, backends and libraries of this build");
  m.def("describe_devices", &hetsgd::describe_devices, "the devices this build can use");
  hp::bind_data(m);
  hp::bind_model(m);
  hp::bind_train(m);
  hp::bind_metrics(m);
}
