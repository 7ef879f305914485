#!/usr/bin/env bash
# Every standing GPU measurement in one command, on one H100:
#
#   tools/gpu_measure.sh [--tiny] DATA OUT [ITEM...]
#
#   train-base  the base model at 25,000-token updates, bf16, fused attention, the loss in
#               chunks, eager and compiled, in packed batches of one shape: target tokens/s,
#               MFU, peak memory, padding, and the GPU time of three updates of each by kind
#               of work
#   train-big   the same for the big model
#   decode      beam-4 decoding of 1,000 newstest2014 sentences with the base shape's
#               37,000 outputs, untrained (so every output runs to its length limit)
#   default     the default command's first 500 of its 5,600 updates, from an empty folder
#
# DATA holds wmt14/ and multi30k/ (as ../shared/data). OUT receives one JSON file per
# item, summary.txt (one line per item found in OUT, by tools/gpu_summary.py) and
# README.md (the commands as they ran, added to by each call). With no ITEM, all four.
# Each item runs under `timeout` (270 s for a training item, which compiles its one shape
# first; 90 s for decode, 150 s for default), so
# that a slow item leaves time for the next. Where one call may run 10 minutes, two
# calls hold them: `... DATA OUT train-base decode default`, then `... DATA OUT
# train-big`. --tiny adds options to every command that shrink it to a few CPU minutes
# (the multi30k model for both training items, three sentences, two updates): the test
# in `make test` runs the script that way.
#
# An item that reaches its time limit is listed in OUT/stopped.txt, one that fails in
# OUT/failed.txt with its exit status; summary.txt says which for an item without a
# result. PYTHON names the interpreter (default python3), which must import torch.
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
for arg in "$@"; do
  case $arg in
    -h | --help)
      usage
      exit 0
      ;;
  esac
done
tiny=0
if [ "${1:-}" = --tiny ]; then
  tiny=1
  shift
fi
if [ $# -lt 2 ]; then
  usage
  exit 2
fi
data=$1 out=$2
shift 2
items=("$@")
[ ${#items[@]} -gt 0 ] || items=(train-base train-big decode default)
for name in "${items[@]}"; do
  case $name in
    train-base | train-big | decode | default) ;;
    *)
      echo "gpu_measure.sh: unknown item '$name' (train-base, train-big, decode or default)" >&2
      exit 2
      ;;
  esac
done
# OUT is a folder, new or not; every item writes into it
if [ -z "$out" ]; then
  echo "gpu_measure.sh: OUT is empty: name the folder that receives the measurements" >&2
  exit 2
fi
if [ -e "$out" ] && [ ! -d "$out" ]; then
  echo "gpu_measure.sh: OUT $out is not a folder: name a new folder, or one that exists" >&2
  exit 2
fi
python=${PYTHON:-python3}
# an interpreter that does not run, or has no torch, would fail every item in turn
if ! "$python" -c "import torch" >/dev/null 2>&1; then
  echo "gpu_measure.sh: PYTHON=$python does not run or cannot import torch: set PYTHON to the interpreter of the package's environment" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}"
if ! mkdir -p -- "$out" 2>/dev/null; then
  echo "gpu_measure.sh: cannot make the folder OUT $out" >&2
  exit 2
fi
readme=$out/README.md
[ -e "$readme" ] || printf '# GPU measurements\n\n`summary.txt` has one line per item.\n' >"$readme"
{
  echo
  echo "\`tools/gpu_measure.sh$([ $tiny = 1 ] && echo " --tiny") DATA OUT ${items[*]}\` on"
  echo "$(date -u '+%Y-%m-%d %H:%M') (UTC), at commit ${GPU_MEASURE_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)},"
  echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo none). Its commands:"
  echo
} >>"$readme"

# runs one item's command under its time limit, and records it in the README
item() {
  local name=$1 seconds=$2
  shift 2
  echo "== $name ($(date -u +%H:%M:%S))"
  printf -- '- %s: `%s`\n' "$name" "$*" >>"$readme"
  local started=$SECONDS
  # the limits budget an H100's minutes; a tiny run on a busy CPU gets ten times theirs
  if [ $tiny = 1 ]; then seconds=$((seconds * 10)); fi
  local status=0
  timeout "$seconds" "$@" || status=$?
  # 124: timeout stopped the command at its limit (137: with SIGKILL); any other
  # status is the command's own failure (126 and 127: it could not be run)
  if [ $status = 124 ] || [ $status = 137 ]; then
    echo "$name: stopped at its time limit of $seconds s (status $status)" | tee -a "$out/stopped.txt"
  elif [ $status != 0 ]; then
    echo "$name: failed (status $status)" | tee -a "$out/failed.txt"
  fi
  echo "$name: $((SECONDS - started)) s" >>"$out/seconds.txt"
}

small_train=() small_decode=() small_default=()
if [ $tiny = 1 ]; then
  small_train=(--preset multi30k --batch-tokens 400 --steps 1 --profile 1 --no-compile --device cpu)
  small_decode=(--limit 3 --device cpu)
  small_default=(--max-steps 2 --valid-every 1 --save-every 1 --average 1 --beam 1 --max-extra 2 --device cpu)
fi

for name in "${items[@]}"; do
  case $name in
    train-base | train-big)
      item "$name" 270 "$python" -m annotated_transformer.benchmark train \
        --preset "${name#train-}" --paths fast --compile --pack --steps 20 --profile 3 \
        --data-dir "$data" --no-progress -o "$out/$name.json" "${small_train[@]}"
      ;;
    decode)
      item decode 90 "$python" -m annotated_transformer.benchmark decode \
        --random-weights base --test-set newstest2014 --limit 1000 --engines ours \
        --beam-size 4 --data-dir "$data" --no-progress -o "$out/decode.json" \
        "${small_decode[@]}"
      ;;
    default)
      rm -rf "$out/default-run"
      item default 150 "$python" -m annotated_transformer.train --data-dir "$data" \
        --max-steps 500 --out-dir "$out/default-run" --no-progress "${small_default[@]}"
      for f in config.json metrics.jsonl results.json; do
        cp "$out/default-run/$f" "$out/default-$f" 2>/dev/null || true
      done
      rm -rf "$out/default-run"
      ;;
  esac
done

"$python" "$here/gpu_summary.py" "$out" | tee "$out/summary.txt"
