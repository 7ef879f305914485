#!/usr/bin/env bash
# The standing GPU measurements, on one GPU, each written as a file into OUT:
#
#   tools/gpu_measure.sh DATA OUT [ITEM...]
#
#   train-base  the base model at 25,000-token updates, bf16, eager and compiled (8 fixed
#               shapes): tokens/s, MFU, peak memory, padding and the top operators
#               (OUT/train-base-gpu.json, OUT/train-base-gpu.txt)
#   train-big   the same for the big model (OUT/train-big-gpu.json, .txt)
#   default     the default command (make demo) from an empty run folder: its log, with
#               the minutes it took (OUT/default-gpu.log, OUT/default-gpu-results.json)
#
# With no ITEM, all three, in that order (together longer than one 10-minute call). DATA
# holds wmt14/ and multi30k/ (as ../shared/data). Each item runs under `timeout`
# (GPU_ITEM_SECONDS, default 280), so that one slow item leaves time for the next.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
data=$1 out=$2
shift 2
items=("$@")
[ ${#items[@]} -gt 0 ] || items=(train-base train-big default)
python=${PYTHON:-python3}
seconds=${GPU_ITEM_SECONDS:-280}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  >"$out/gpu.txt" 2>&1 || true

for item in "${items[@]}"; do
  echo "== $item ($(date -u +%H:%M:%S))"
  case $item in
    train-base | train-big)
      preset=${item#train-}
      timeout "$seconds" "$python" -m annotated_transformer.benchmark train \
        --preset "$preset" --paths fast --compile --buckets 8 --steps 30 --profile 3 \
        --data-dir "$data" --no-progress -o "$out/$item-gpu.json" \
        | tee "$out/$item-gpu.txt" || echo "$item: stopped (status $?)"
      ;;
    default)
      started=$(date +%s)
      timeout "$seconds" "$python" -m annotated_transformer.train --data-dir "$data" \
        --out-dir "$out/default-run" --no-progress >"$out/default-gpu.log" 2>&1 \
        || echo "default: stopped (status $?)"
      echo "wall minutes: $((($(date +%s) - started) / 60))" >>"$out/default-gpu.log"
      cp "$out/default-run/results.json" "$out/default-gpu-results.json" 2>/dev/null || true
      rm -rf "$out/default-run"
      tail -n 3 "$out/default-gpu.log"
      ;;
    *)
      echo "unknown item $item: train-base, train-big or default" >&2
      exit 2
      ;;
  esac
done
