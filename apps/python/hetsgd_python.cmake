# Decides HETSGD_WITH_PYTHON from HETSGD_PYTHON (AUTO|ON|OFF): the pybind11 module `_hetsgd`
# of the `hetsgd` Python package (apps/python). It links the static libraries into a shared
# object, so they are compiled position-independent when it is built.
#
# The interpreter: Python_EXECUTABLE when given (setup.py passes its own), else the first of
# `python3` on PATH and /usr/bin/python3 that imports numpy (a pyenv or venv python without
# numpy could build the module but not run it).
set(HETSGD_WITH_PYTHON OFF)
string(TOUPPER "${HETSGD_PYTHON}" _py_mode)
if(NOT _py_mode STREQUAL "OFF")
  if(NOT HETSGD_BUILD_APPS)
    if(_py_mode STREQUAL "ON")
      message(SEND_ERROR "HETSGD_PYTHON=ON needs HETSGD_BUILD_APPS=ON (it reuses the options)")
    endif()
  else()
    if(NOT Python_EXECUTABLE)
      find_program(_py_on_path NAMES python3 NO_CACHE)
      foreach(_py IN ITEMS "${_py_on_path}" /usr/bin/python3)
        if(_py AND NOT Python_EXECUTABLE)
          execute_process(COMMAND "${_py}" -c "import numpy" RESULT_VARIABLE _py_rc
                          OUTPUT_QUIET ERROR_QUIET)
          if(_py_rc EQUAL 0)
            set(Python_EXECUTABLE "${_py}")
          endif()
        endif()
      endforeach()
    endif()
    if(Python_EXECUTABLE)
      find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
      set(PYBIND11_FINDPYTHON ON)
      find_package(pybind11 2.6 CONFIG QUIET)
    endif()
    if(Python_FOUND AND pybind11_FOUND)
      set(HETSGD_WITH_PYTHON ON)
      set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    elseif(_py_mode STREQUAL "ON")
      message(SEND_ERROR "HETSGD_PYTHON=ON but no Python with numpy, its headers and pybind11 "
                         "were found (Debian: python3-dev python3-numpy pybind11-dev)")
    endif()
  endif()
endif()
