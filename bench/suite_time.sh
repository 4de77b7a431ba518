#!/bin/bash
# The same end-to-end files (the delegation path) timed in two checkouts, interleaved, -n 2.
#   bench/suite_time.sh OLD_CHECKOUT NEW_CHECKOUT [ROUNDS]
# Each checkout needs its own .venv (`make .venv/.installed` there).
set -u
old=$1 new=$2 rounds=${3:-3}
FILES="tests/e2e/test_delegate_loop.py tests/e2e/test_verdicts.py tests/e2e/test_proof.py tests/e2e/test_attacks.py tests/e2e/test_gamed_tests.py tests/e2e/test_crash_and_bad_input.py"
for i in $(seq 1 "$rounds"); do
  for tree in "$old" "$new"; do
    cd "$tree" || exit 1
    sync; sleep 5
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    .venv/bin/pytest -n 2 -q -m "not slow" -p no:cacheprovider $FILES > "/tmp/suite-time-$i.log" 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "$tree round $i rc $rc $(echo "$e - $s" | bc) s: $(tail -1 "/tmp/suite-time-$i.log")"
  done
done
