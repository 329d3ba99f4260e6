#!/usr/bin/env bash
# The libraries meshsim loads at start-up (registered by tests/CMakeLists.txt):
#
#   startup_links.sh MESHSIM [PLUGIN]
#
# Fails when ldd shows the CUDA runtime, cuBLAS/cuBLASLt or NCCL among MESHSIM's libraries (they
# belong to the CUDA backend plugin, opened only by --backend cuda). With PLUGIN (a build with the
# CUDA backend) it also requires the plugin to link cuBLAS and NCCL and to export the factory, so
# the pattern is shown to match what ldd prints for them.
set -uo pipefail
readonly CUDA_LIBS='libcudart|libcublas|libnccl'
meshsim=$1
plugin=${2:-}

libs=$(ldd "$meshsim") || { echo "ldd $meshsim failed" >&2; exit 1; }
if grep -E "$CUDA_LIBS" <<<"$libs"; then
  echo "FAIL: $meshsim links the libraries above (they belong to the CUDA backend plugin)" >&2
  exit 1
fi
echo "ok: $meshsim links no libcudart, libcublas or libnccl ($(grep -c '=>' <<<"$libs") libraries)"
[[ -z $plugin ]] && exit 0

plugin_libs=$(ldd "$plugin") || { echo "ldd $plugin failed" >&2; exit 1; }
for lib in libcublas libnccl; do
  if ! grep -q "$lib" <<<"$plugin_libs"; then
    echo "FAIL: $plugin does not link $lib" >&2
    exit 1
  fi
done
exported=$(nm -D --defined-only "$plugin" | awk '$2 == "T" { print $3 }')
if [[ $exported != meshsim_cuda_plugin_v1 ]]; then
  echo "FAIL: $plugin exports [$exported], expected only meshsim_cuda_plugin_v1" >&2
  exit 1
fi
echo "ok: $plugin links libcublas and libnccl and exports only meshsim_cuda_plugin_v1"
