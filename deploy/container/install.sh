#!/bin/sh
# Install the Arbiter server into a virtual environment at PREFIX, from the checkout
# at SOURCE: build the wheel, then install it with EXTRAS and TORCH. The container
# image (Dockerfile) runs exactly this; tests/test_packaging.py runs it on the host.
#
#   install.sh SOURCE PREFIX [EXTRAS] [TORCH]
#
# EXTRAS defaults to server,models,postgres. TORCH is the torch requirement: the
# wheel only bounds it below (torch>=2.4), so choose the build here, e.g.
# 'torch==2.13.0' with PIP_INDEX_URL pointing at a CPU or CUDA index.
set -eu
source_dir=$1
prefix=$2
extras=${3:-server,models,postgres}
torch=${4:-torch>=2.4}

python3 -m venv "$prefix"
"$prefix/bin/pip" install --quiet --no-cache-dir --upgrade pip
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$prefix/bin/pip" wheel --quiet --no-cache-dir --no-deps -w "$wheels" "$source_dir"
"$prefix/bin/pip" install --quiet --no-cache-dir "$torch" "$(ls "$wheels"/arbiter_rewards-*.whl)[$extras]"
"$prefix/bin/pip" check
