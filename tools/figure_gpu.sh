#!/usr/bin/env bash
# The attention-figure model at the paper's base shape, on one GPU, in about ten minutes:
# train it on the figure corpus (appendix E), score the 1,000 held-out Europarl pairs, capture
# and measure the attention of chapter 15's sentences, and draw Figures 3-5 from the capture.
#
#   tools/figure_gpu.sh DATA STORE [TRAIN OPTIONS...]
#
# DATA holds europarl-v7-sample/ and extra-en-de/; STORE receives the run's small files (settings,
# metrics, results, translations), figure-attention.npz and .json, and figure-3/4/5.png. The run
# folder with its checkpoints is STORE/run (delete it when done). Options given after STORE are
# added to the training command and win over its own (a CPU test: --device cpu --d-model 32 ...).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,11p "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
data=$1 store=$2
shift 2
python=${PYTHON:-python3}
# a STORE this script made is removed again if a failure leaves it empty
[ -e "$store" ] || trap 'rmdir "$store" 2>/dev/null || true' EXIT
mkdir -p "$store"

# 6 layers of width 512 (d_ff 2048), 8 heads, dropout 0.1: the paper's base shape; the rate of
# eq. 3 at the paper's peak (warm-up 1,000 at half the rate), training stops after 6 minutes.
"$python" -m annotated_transformer.train --preset figure --corpus figure --data-dir "$data" \
  --d-model 512 --d-ff 2048 --dropout 0.1 --batch-tokens 12500 --warmup 1000 --lr-factor 0.5 \
  --max-steps 100000 --max-minutes 6 --valid-every 500 --save-every 500 --average 5 \
  --no-progress --out-dir "$store/run" "$@"
cp "$store"/run/{config.json,metrics.jsonl,results.json,valid.hyp} "$store"/

# the weights of chapter 15's sentences, stored in float16, and the measures of Figures 3-5
sentences=$(dirname "$0")/../book/measured/figure-sentences.txt
"$python" -m annotated_transformer.visualize --run "$store/run" -i "$sentences" \
  --save "$store/figure-attention.npz" --measure "$store/figure-attention.json" --no-progress

# Figures 3-5 from the stored weights, in layer 5 as in the paper
stored=(--stored "$store/figure-attention.npz" --layer 5 --no-progress)
"$python" -m annotated_transformer.visualize "${stored[@]}" --index 1 --query making \
  -o "$store/figure-3.png"
"$python" -m annotated_transformer.visualize "${stored[@]}" --index 2 --query its \
  -o "$store/figure-4.png"
"$python" -m annotated_transformer.visualize "${stored[@]}" --index 2 -o "$store/figure-5.png"
echo "stored in $store: $(cd "$store" && ls -m --ignore=run)"
