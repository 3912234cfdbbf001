#!/bin/sh
# `torchtrap` as run on a project whose torch is 2.5: the TT219 rows of
# model-rules.tsv are bugs only where torch < 2.6 (the default was then
# weights_only=False), and score.py runs the interpreter's torch otherwise.
#   python /work/shared/eval/score.py bench/eval/model-rules.tsv TREES bench/eval/torchtrap-torch-2.5.sh TT219
here=$(cd "$(dirname "$0")" && pwd)
cmd=$1; shift
exec "${TORCHTRAP:-$here/../../.venv/bin/torchtrap}" "$cmd" --torch-version 2.5 "$@"
