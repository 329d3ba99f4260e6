#!/usr/bin/env bash
# The Chakra export's acceptance check (registered by tests/tools/CMakeLists.txt):
#
#   chakra_round_trip.sh <meshsim> <et_def.proto>
#
# 1. `meshsim export --chakra` of a llama3-8b step on 16 GPUs (tp 4, pp 2, dp 2) writes 16 rank
#    files, and `meshsim simulate --chakra` of them gives the step's own step_time_s as makespan_s;
# 2. protoc itself (not meshsim's reader) decodes rank 0's messages against Chakra's schema, split
#    as Chakra's protolib.py decodeMessage reads them: a varint length, then the message.
set -euo pipefail
meshsim=$1
proto=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-chakra.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

plan=(--model llama3-8b --gpus 16 --tp 4 --pp 2 --dp 2 --gbs 16 --no-fold)
"$meshsim" export --chakra et "${plan[@]}" >/dev/null
files=$(find et -name 'step.*.et' | wc -l)
[[ $files == 16 ]] || { echo "FAILED: $files rank files, expected 16"; exit 1; }
[[ -f et/comm_group.json ]] || { echo "FAILED: no et/comm_group.json"; exit 1; }
step=$("$meshsim" step "${plan[@]}" --json | sed -n 's/^  "step_time_s": \(.*\),$/\1/p')
trace=$("$meshsim" simulate --chakra et --json | sed -n 's/^  "makespan_s": \(.*\),$/\1/p')
if [[ -z $step || $step != "$trace" ]]; then
  echo "FAILED: step_time_s '$step' but the Chakra trace's makespan_s '$trace'"
  exit 1
fi
echo "ok: 16 rank files, makespan_s $trace = step_time_s $step"

# protolib's framing in Python: the GlobalMetadata, then the nodes, each after its varint length.
# Re-tagged as fields 1 and 2 of a wrapper message (same length prefixes), one protoc run decodes
# them all.
python3 - et/step.0.et <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
out, at, k = bytearray(), 0, 0
while at < len(data):
    start, size, shift = at, 0, 0
    while True:
        b = data[at]; at += 1
        size |= (b & 0x7F) << shift; shift += 7
        if not b & 0x80: break
    out += bytes([0x0A if k == 0 else 0x12]) + data[start:at + size]
    at += size; k += 1
open("rank0.bin", "wb").write(out)
PY
cp "$proto" et_def.proto
cat >trace.proto <<'PROTO'
syntax = "proto3";
import "et_def.proto";
message RankFile {
  ChakraProtoMsg.GlobalMetadata metadata = 1;
  repeated ChakraProtoMsg.Node node = 2;
}
PROTO
protoc -I. --decode=RankFile trace.proto <rank0.bin >rank0.txt
grep -q '^  version: "0.0.4"$' rank0.txt ||
  { echo "FAILED: protoc does not read rank 0's GlobalMetadata"; exit 1; }
types=$(sed -n 's/^  type: //p' rank0.txt | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')
for t in COMP_NODE COMM_COLL_NODE COMM_SEND_NODE COMM_RECV_NODE; do
  [[ $types == *"$t="* ]] || { echo "FAILED: protoc found no $t in rank 0 ($types)"; exit 1; }
done
echo "ok: protoc decodes rank 0: $types"
