#!/bin/sh
# Rebuild the checked-in cubins and SASS listings (needs nvcc and cuobjdump; CUDA 13 used).
# sm_80: A100 rows; sm_90: H100 PCIe rows; sm_75: the Quadro GV100 rows (nvcc 13 cannot emit
# sm_70; the SASS is timed with the Volta table quadro_gv100).
#   ./make.sh                 all kernels
#   ./make.sh cache latency   only these (stream cache l2cache latency polybench)
set -e
cd "$(dirname "$0")"
CUOBJDUMP=${CUOBJDUMP:-$(python3 -c 'from teg.sass.binaries import find_tool; print(find_tool("cuobjdump"))')}
WANT=${*:-"stream cache l2cache latency polybench"}
for k in stream cache l2cache latency; do
  case " $WANT " in *" $k "*) ;; *) continue ;; esac
  for arch in sm_80 sm_90; do
    nvcc -cubin -O3 -arch=$arch -o $k.$arch.cubin $k.cu
    "$CUOBJDUMP" -sass $k.$arch.cubin > $k.$arch.sass
  done
done
case " $WANT " in *" polybench "*)
  nvcc -cubin -O3 -arch=sm_75 -o polybench.sm_75.cubin polybench.cu
  "$CUOBJDUMP" -sass polybench.sm_75.cubin > polybench.sm_75.sass ;;
esac
