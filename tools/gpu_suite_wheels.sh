#!/usr/bin/env bash
# Prepares what the whole GPU suite needs on the GPU machine, whose image lacks DuckDB, arro3, Dask, distributed
# (and what they import that the image has not) and Polars: ../shared/gpu/fetch-wheels with those wheels into
# .gpu-wheels (about 48 MB), and Polars' compiled runtime apart in .gpu-polars (about 52 MB: the two do not fit
# the 64 MiB one call carries). Usage, from the project root:
#   tools/gpu_suite_wheels.sh
# then two calls on one warm machine (the second within ~30 s of the first, or /tmp/site is gone):
#   run carry [".gpu-polars"]  command: python3 -m pip install -q --no-index --no-deps --no-compile \
#       --target /tmp/site .gpu-polars/*.whl
#   run carry [".gpu-wheels"]  command: bash .gpu-wheels/run.sh python3 -m pytest -m gpu -n 14 --dist load \
#       --timeout=300 -q -p no:cacheprovider -rfE tests/
# Not included: dask-cuda, RMM, cuDF (../shared/gpu/fetch-cudf), Ray and Spark (tools/gpu_engines.sh); the tests
# and doc blocks that need them skip without them.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
../shared/gpu/fetch-wheels duckdb arro3-core "dask[dataframe]>=2025.1" "distributed>=2025.1" partd locket tornado \
  tblib zict "polars>=1.20"
grep -qx '/.gpu-polars/' .git/info/exclude 2>/dev/null || echo '/.gpu-polars/' >> .git/info/exclude
rm -rf .gpu-polars && mkdir -p .gpu-polars
runtime=$(unzip -p .gpu-wheels/polars-*.whl '*/METADATA' | sed -n 's/^Requires-Dist: \(polars-runtime-32==[^ ;]*\)$/\1/p')
if [ -n "$runtime" ]; then  # Polars before 1.34 was one wheel, with its runtime inside
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d .gpu-polars "$runtime"
fi
du -sh .gpu-wheels .gpu-polars
