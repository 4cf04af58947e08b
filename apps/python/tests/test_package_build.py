"""The package build (setup.py): CPU-only unless HETSGD_PYTHON_CUDA asks for the CUDA backend."""

import importlib.util

import pytest
import setuptools

from conftest import ROOT


@pytest.fixture
def setup_py(monkeypatch):
    """apps/python/setup.py as a module, without running setuptools.setup()."""
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: None)
    spec = importlib.util.spec_from_file_location("hetsgd_setup", ROOT / "apps/python/setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cuda_flags(args):
    return [a for a in args if a.startswith("-DHETSGD_CUDA=")]


def test_the_package_builds_cpu_only_by_default(setup_py):
    assert cuda_flags(setup_py.configure_command("/b", {})) == ["-DHETSGD_CUDA=OFF"]
    assert cuda_flags(setup_py.configure_command("/b", {"HETSGD_PYTHON_CUDA": "0"})) == [
        "-DHETSGD_CUDA=OFF"]


def test_cuda_is_built_when_asked(setup_py):
    for value in ("1", "ON", "yes"):
        args = setup_py.configure_command("/b", {"HETSGD_PYTHON_CUDA": value})
        assert cuda_flags(args) == ["-DHETSGD_CUDA=ON"], value


def test_a_bad_value_names_the_variable(setup_py):
    with pytest.raises(RuntimeError, match="HETSGD_PYTHON_CUDA='maybe'"):
        setup_py.configure_command("/b", {"HETSGD_PYTHON_CUDA": "maybe"})


def test_configure_flags_from_the_environment_come_last(setup_py):
    args = setup_py.configure_command("/b", {"HETSGD_CMAKE_ARGS": "-DHETSGD_CUDA=AUTO -DX=1"})
    assert args[-2:] == ["-DHETSGD_CUDA=AUTO", "-DX=1"]
