# Sourced (not run) by the scripts that run on the lent GPU machine, which has no network: the
# checkout in the working folder installed with pip --target into /tmp/dmlgpu-site (--upgrade: a
# machine still warm from an earlier call holds that call's install, which pip would keep),
# PYTHONPATH extended, and the working folder moved to /tmp, so that the installed copy (with its
# compiled hot path), not the checkout, is imported. Sets `root` to the checkout.
# shellcheck shell=bash
root=$PWD
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/dmlgpu-site "$root" || return 1
export PYTHONPATH="/tmp/dmlgpu-site${PYTHONPATH:+:$PYTHONPATH}"
cd /tmp || return 1
python3 -c 'import dmlgpu, sys; sys.exit(0 if dmlgpu.__file__.startswith("/tmp/dmlgpu-site") else "not the installed copy")' || return 1
