#!/bin/sh
# Coverage of the reconcile core (src/core/*.c: the state machine, the
# observed-Job records, the plan and its executor) from the tests that drive
# it: the core unit tests and the scenarios run through the simulator
# (tests/unit/sim). The simulator itself (src/sim) and the test fakes are
# not counted. Builds in build-coverage/ with -DJS_COVERAGE=ON, runs
# `ctest -L 'core|sim'`, prints the gcovr summary and exits non-zero when
# lines are below JS_COVERAGE_MIN (default 90 %) or branches below
# JS_COVERAGE_BRANCH_MIN (default 85 %).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${JS_COVERAGE_BUILD:-"$root/build-coverage"}
min=${JS_COVERAGE_MIN:-90}
bmin=${JS_COVERAGE_BRANCH_MIN:-85}
cmake -S "$root" -B "$build" -G Ninja -DJS_COVERAGE=ON >/dev/null
ninja -C "$build" -j "${JS_JOBS:-2}"
find "$build" -name '*.gcda' -delete
ctest --test-dir "$build" -L 'core|sim' --output-on-failure
gcovr --root "$root" --filter "$root/src/core/" --object-directory "$build" \
      --print-summary --fail-under-line "$min" --fail-under-branch "$bmin" "$build"
