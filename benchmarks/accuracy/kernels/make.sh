#!/bin/sh
# Rebuild the checked-in cubins and SASS listings (needs nvcc and cuobjdump; CUDA 13 used).
# sm_80: A100 rows; sm_90: H100 PCIe rows. (The application programs of the apps family,
# ../apps/*.cu, are built by run.py itself, cached by source hash.)
#   ./make.sh                 all kernels
#   ./make.sh cache latency   only these (stream cache l2cache latency)
set -e
cd "$(dirname "$0")"
CUOBJDUMP=${CUOBJDUMP:-$(python3 -c 'from teg.sass.binaries import find_tool; print(find_tool("cuobjdump"))')}
WANT=${*:-"stream cache l2cache latency"}
for k in stream cache l2cache latency; do
  case " $WANT " in *" $k "*) ;; *) continue ;; esac
  for arch in sm_80 sm_90; do
    nvcc -cubin -O3 -arch=$arch -o $k.$arch.cubin $k.cu
    "$CUOBJDUMP" -sass $k.$arch.cubin > $k.$arch.sass
  done
done
