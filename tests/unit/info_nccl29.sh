#!/bin/sh
# info_nccl29.sh -- `mgcomm info --comm` and `mgcomm info --nccl-params` (issue 24), run as a user
# would: a communicator's properties and memory on the backend MG_BACKEND_AUTO picks (host here),
# and NCCL's parameters through its parameter API with the NCCL that MGCOMM_NCCL_LIBRARY names
# (2.32.3: listed; 2.29.2: refused naming 2.30.7). $MGCOMM is the tool; $1 and $2 the two
# libraries (skip, 77, when the newer is absent).
#   info_nccl29.sh NEW_LIB OLD_LIB
set -u
fail() { echo "FAIL: $*"; exit 1; }
new=$1 old=$2
out=$(MGCOMM_BACKEND=host "$MGCOMM" info --comm) || fail "info --comm exited $?"
echo "$out" | grep -q "^  backend  *host$" || fail "no host backend line: $out"
echo "$out" | grep -q "^  host RMA  *0$" || fail "no host RMA line"
echo "$out" | grep -Eq "^  memory  *[0-9]+ bytes \([1-9][0-9]* suspendable, [1-9][0-9]* persistent\)$" ||
  fail "no memory line: $out"
"$MGCOMM" info --comm --json >/dev/null 2>&1
[ $? -eq 2 ] || fail "--comm with --json is not a usage error"
[ -f "$new" ] || { echo "SKIP: $new is absent (tests/unit/nccl29.cmake)"; exit 77; }
out=$(NCCL_DEBUG_SUBSYS=COLL MGCOMM_NCCL_LIBRARY=$new "$MGCOMM" info --nccl-params) ||
  fail "info --nccl-params exited $?"
echo "$out" | grep -q "^  NCCL_DEBUG_SUBSYS=COLL$" || fail "NCCL_DEBUG_SUBSYS not listed: $out"
if [ -f "$old" ]; then
  out=$(MGCOMM_NCCL_LIBRARY=$old "$MGCOMM" info --nccl-params) || fail "exited $?"
  echo "$out" | grep -q "MG_ERR_NOT_SUPPORTED: .*needs NCCL >= 2.30.7" ||
    fail "the old NCCL is not refused by name: $out"
fi
echo "info --comm and --nccl-params: ok"
