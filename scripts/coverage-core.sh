#!/bin/sh
# Line coverage of src/core from the core tests. Builds in build-coverage/
# with -DJS_COVERAGE=ON, runs `ctest -L core`, prints the gcovr summary for
# src/core and exits non-zero when it is below the threshold (default 90 %).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${JS_COVERAGE_BUILD:-"$root/build-coverage"}
min=${JS_COVERAGE_MIN:-90}
cmake -S "$root" -B "$build" -G Ninja -DJS_COVERAGE=ON >/dev/null
ninja -C "$build"
find "$build" -name '*.gcda' -delete
ctest --test-dir "$build" -L core --output-on-failure
gcovr --root "$root" --filter "$root/src/core/" --object-directory "$build" \
      --print-summary --fail-under-line "$min" "$build"
