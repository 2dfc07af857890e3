# BLAS and LAPACK for the direct solver (src/direct), as the interface target tcfem_blas_lapack.
# Static archives come first, so that the tools also run on machines without these libraries:
# OpenBLAS's libopenblas.a (BLAS and LAPACK in one archive), else the reference libblas.a and
# liblapack.a; both need the gfortran runtime, taken from its archives too (libgfortran.a,
# libquadmath.a, found through the compiler). Without archives, find_package(BLAS) and
# find_package(LAPACK) link whatever shared libraries they find.
include(CheckCXXSourceCompiles)

set(_tcfem_blas_probe "
extern \"C\" { void dgemm_(); void sgemm_(); void dsyrk_(); void dtrsm_(); void dsymv_();
               void dpotrf_(); void dpotri_(); void dsyevd_(); void dstev_(); }
int main() {
  void (*f[])() = {dgemm_, sgemm_, dsyrk_, dtrsm_, dsymv_, dpotrf_, dpotri_, dsyevd_, dstev_};
  return f[0] == nullptr;
}")

function(_tcfem_archive_of_compiler name out)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${name} OUTPUT_VARIABLE path
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(path AND IS_ABSOLUTE "${path}" AND EXISTS "${path}")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

add_library(tcfem_blas_lapack INTERFACE)
set(TCFEM_BLAS_NAME "")
option(TCFEM_STATIC_BLAS "Link BLAS/LAPACK statically where the archives exist" ON)
if(TCFEM_STATIC_BLAS)
  _tcfem_archive_of_compiler(libgfortran.a _gfortran_a)
  _tcfem_archive_of_compiler(libquadmath.a _quadmath_a)
  find_library(TCFEM_OPENBLAS_ARCHIVE NAMES libopenblas.a)
  find_library(TCFEM_BLAS_ARCHIVE NAMES libblas.a)
  find_library(TCFEM_LAPACK_ARCHIVE NAMES liblapack.a)
  set(_runtime ${_gfortran_a} ${_quadmath_a} Threads::Threads m)
  if(_gfortran_a)
    foreach(_candidate openblas reference)
      if(_candidate STREQUAL "openblas" AND TCFEM_OPENBLAS_ARCHIVE)
        set(_libs ${TCFEM_OPENBLAS_ARCHIVE} ${_runtime})
        set(_name "OpenBLAS (static)")
      elseif(_candidate STREQUAL "reference" AND TCFEM_BLAS_ARCHIVE AND TCFEM_LAPACK_ARCHIVE)
        set(_libs ${TCFEM_LAPACK_ARCHIVE} ${TCFEM_BLAS_ARCHIVE} ${_runtime})
        set(_name "BLAS/LAPACK (static: ${TCFEM_BLAS_ARCHIVE})")
      else()
        continue()
      endif()
      set(CMAKE_REQUIRED_LIBRARIES ${_libs})
      check_cxx_source_compiles("${_tcfem_blas_probe}" TCFEM_BLAS_LINKS_${_candidate})
      unset(CMAKE_REQUIRED_LIBRARIES)
      if(TCFEM_BLAS_LINKS_${_candidate})
        target_link_libraries(tcfem_blas_lapack INTERFACE ${_libs})
        set(TCFEM_BLAS_NAME "${_name}")
        break()
      endif()
    endforeach()
  endif()
endif()
if(NOT TCFEM_BLAS_NAME)
  find_package(BLAS REQUIRED)
  find_package(LAPACK REQUIRED)
  target_link_libraries(tcfem_blas_lapack INTERFACE LAPACK::LAPACK BLAS::BLAS)
  set(TCFEM_BLAS_NAME "BLAS/LAPACK (shared: ${BLAS_LIBRARIES})")
endif()
message(STATUS "tcfem direct solver BLAS/LAPACK: ${TCFEM_BLAS_NAME}")
