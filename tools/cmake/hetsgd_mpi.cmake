# Decides HETSGD_WITH_MPI from HETSGD_MPI (AUTO|ON|OFF): Open MPI (or any MPI with a C++
# compiler wrapper) for training across servers. Without it core/cluster/world_disabled.cpp keeps
# every run in one process.
set(HETSGD_WITH_MPI OFF)
set(HETSGD_MPI_SUMMARY "OFF")
string(TOUPPER "${HETSGD_MPI}" _mpi_mode)
if(NOT _mpi_mode STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(HETSGD_WITH_MPI ON)
    set(HETSGD_MPI_SUMMARY "ON(${MPI_CXX_VERSION})")
  elseif(_mpi_mode STREQUAL "ON")
    message(SEND_ERROR "HETSGD_MPI=ON but no MPI was found (Debian: libopenmpi-dev openmpi-bin)")
  endif()
endif()
