# Sourced (from the repository root) by the device scripts: $OUT (default /tmp/out) created,
# the carried wheels (.whl/, e.g. gmpy2, python-flint for the device's Python) installed into
# /tmp/site and put on PYTHONPATH with the repository, unbuffered Python output. The status of
# `source` is that of the wheel install (callers that need the wheels: `|| exit 1`).
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
  export PYTHONPATH=/tmp/site:.
  _device_env_rc=0
else
  _device_env_rc=1
fi
export PYTHONUNBUFFERED=1
return $_device_env_rc
