#!/usr/bin/env bash
# The perf suite on a GPU machine without network, from the kit that scripts/gpu_kit.py made.
#
#   OUT=/path/to/empty/folder bash scripts/gpu_run.sh
#
# Run from a copy of the repository with the kit in .kit/ (BPSPERF_KIT names another folder).
# It unpacks Ray's trimmed tree and the kit's wheels into a temporary site folder, puts it and
# the project (the kit's project.tar.gz where it has one, else this repository) on PYTHONPATH,
# loads the plugin with -p where it is not installed, and runs README's `pytest -m perf` with
# the torch backend on the embedded Ray, each session under its own `timeout`:
#
#   1. record: a baseline for this machine's profile (--bpsperf-update-baselines, 3 repeats)
#      into a copy of baselines/;
#   2. gate:   a second session judged against it;
#   3. pairs:  base vs head of a throwaway two-commit repository whose head commit slows
#      training by 30% (its entry point sets BPSPERF_FAULT=slowdown:30): a regression;
#   4. steps 1 and 2 again in bfloat16, if time is left.
#
# Everything ends within BPSPERF_KIT_DEADLINE seconds (480; a step that would not fit is
# skipped and says so); after each session, processes of this run left behind (found by a
# variable only this run's processes carry) are killed by pid. $OUT gets at most 8 files:
# summary.txt (GPU, torch/CUDA/NCCL/Ray versions, each session's exit status, wall time and
# img/s), record-<dtype>.json, gate-<dtype>.json, pairs.json, baselines.tar.gz (the recorded
# baseline file) and logs.tar.gz (sessions, roles, Ray's logs of a failed session).
#
# Environment: OUT (required); BPSPERF_KIT (.kit); BPSPERF_KIT_PYTHON (python3);
# BPSPERF_KIT_DEADLINE (seconds, 480); BPSPERF_KIT_DTYPES ("float32 bfloat16");
# BPSPERF_KIT_SESSIONS ("record gate pairs": which sessions run); BPSPERF_KIT_REPEATS (3: the record's runs);
# BPSPERF_KIT_ARGS (more pytest arguments for every session); BPSPERF_KIT_CPU=1: the CPU
# settings (gloo, 6 steps of 4 images of 32 px, float32; what the kit's test runs).
# Exit status: 0 when every session that ran ended as expected (record and gate 0, pairs 1:
# the regression), 1 otherwise.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${OUT:?set OUT to the folder for results and logs}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
KIT="${BPSPERF_KIT:-$ROOT/.kit}"
PY="${BPSPERF_KIT_PYTHON:-python3}"
CPU="${BPSPERF_KIT_CPU:-0}"
DEADLINE="${BPSPERF_KIT_DEADLINE:-480}"
# A session's budget: the GPU's seconds, times SCALE on the CPU (two gloo ranks on a small machine)
SCALE=1
DTYPES="${BPSPERF_KIT_DTYPES:-float32 bfloat16}"
SESSIONS=" ${BPSPERF_KIT_SESSIONS:-record gate pairs} "
REPEATS="${BPSPERF_KIT_REPEATS:-3}"
if [ "$CPU" = 1 ]; then
    SCALE=3
    DTYPES="${BPSPERF_KIT_DTYPES:-float32}"
fi
read -r -a EXTRA <<<"${BPSPERF_KIT_ARGS:-}"
# What the packing, the summary and the last clean-up need after the last session.
RESERVE=20
T0=$SECONDS

# Short: Ray's socket paths live under RAY_TMPDIR and must fit 107 bytes.
WORK="$(mktemp -d /tmp/bpk.XXXXXX)"
LOGS="$WORK/logs"
SITE="$WORK/site"
mkdir -p "$LOGS" "$SITE" "$WORK/r"
STEPS="$WORK/steps.tsv"
: >"$STEPS"
# Every process of this run inherits it: what is left behind is found by it, never by name.
export GPU_KIT_RUN="$WORK"

say() {
    printf 'gpu_run: %s\n' "$*" >&2
    [ -d "$LOGS" ] && printf 'gpu_run: %s\n' "$*" >>"$LOGS/gpu_run.log"
}
left() { echo $((DEADLINE - (SECONDS - T0) - RESERVE)); }

# Kill, by pid, every process that carries this run's GPU_KIT_RUN, except this script and its
# ancestors: what a session left behind (Ray's daemons, workers, roles).
reap() {
    "$PY" - "$1" <<'EOF' >>"$LOGS/gpu_run.log" 2>&1
import os, signal, sys, time
step = sys.argv[1]
mark = ("GPU_KIT_RUN=" + os.environ["GPU_KIT_RUN"]).encode()
keep, pid = set(), os.getpid()
while pid > 1:  # this process and its ancestors: the script and whoever runs it
    keep.add(pid)
    try:
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
def ours():
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in keep:
            continue
        try:
            env = open(f"/proc/{name}/environ", "rb").read().split(b"\0")
            args = open(f"/proc/{name}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if mark in env:
            out.append((int(name), args[:160]))
    return out
found = ours()
for sig in (signal.SIGTERM, signal.SIGKILL):
    for pid, args in found:
        print(f"gpu_run: after {step}: {sig.name} {pid} {args}")
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while found and time.time() < deadline:
        time.sleep(0.2)
        found = [p for p in ours() if p[0] in {q for q, _ in found}]
    if not found:
        break
print(f"gpu_run: after {step}: {'nothing left running' if not found else f'{len(found)} still running'}")
EOF
}

# step NAME BUDGET EXPECTED OPTIONAL DIR COMMAND...: run COMMAND in DIR under timeout (BUDGET seconds,
# or what is left), log in $LOGS/NAME.log; one line of steps.tsv: name, exit status (or skipped), seconds,
# expected status, whether skipping it is fine (1: run only if time is left).
step() {
    local name="$1" budget="$2" expected="$3" optional="$4" dir="$5" limit rc t
    shift 5
    limit=$(left)
    budget=$((budget * SCALE))
    [ "$limit" -gt "$budget" ] && limit=$budget
    if [ "$limit" -lt 30 ]; then
        say "$name: skipped, ${limit} s left of ${DEADLINE} s"
        printf '%s\tskipped\t0\t%s\t%s\n' "$name" "$expected" "$optional" >>"$STEPS"
        return 0
    fi
    say "$name: up to ${limit} s: $*"
    t=$SECONDS
    (cd "$dir" && exec timeout -k 15 "$limit" "$@") >"$LOGS/$name.log" 2>&1 &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD=""
    t=$((SECONDS - t))
    say "$name: exit $rc after $t s"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$t" "$expected" "$optional" >>"$STEPS"
    reap "$name"
    if [ "$rc" != "$expected" ] && [ -d "$WORK/r" ]; then
        # Ray's own logs of the session that did not end as expected
        tar -czf "$LOGS/ray-$name.tar.gz" -C "$WORK/r" . 2>/dev/null
    fi
    rm -rf "$WORK/r" && mkdir -p "$WORK/r"
    return 0
}

# Stopped from outside: the session's timeout goes first (the plugin stops its Ray), then what is left.
CHILD=""
stopped() {
    say "stopped by a signal"
    [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null && sleep 3
    reap stopped
    rm -rf "$WORK"
    exit 1
}
trap stopped INT TERM

# -- the kit ------------------------------------------------------------------------------
say "kit $KIT, work $WORK, deadline $DEADLINE s, cpu=$CPU, dtypes: $DTYPES"
if [ ! -f "$KIT/MANIFEST.json" ]; then
    say "no kit at $KIT: make it with python3 scripts/gpu_kit.py --out .kit"
    exit 1
fi
if ! (cd "$KIT" && sha256sum --quiet -c SHA256SUMS) >>"$LOGS/gpu_run.log" 2>&1; then
    say "the kit's files do not match its SHA256SUMS"
    exit 1
fi
t=$SECONDS
tar -xJf "$KIT"/ray-*-trimmed.tar.xz -C "$SITE"
rc=$?
if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$SITE" \
    "$KIT"/wheels/*.whl >>"$LOGS/gpu_run.log" 2>&1; then
    # no pip for this Python: a wheel is a zip of what goes into site-packages
    say "pip install --target failed: unpacking the wheels with zipfile"
    "$PY" -c 'import sys, zipfile
for w in sys.argv[2:]:
    zipfile.ZipFile(w).extractall(sys.argv[1])' "$SITE" "$KIT"/wheels/*.whl >>"$LOGS/gpu_run.log" 2>&1 || rc=1
fi
printf 'unpack\t%s\t%s\t0\t0\n' "$rc" $((SECONDS - t)) >>"$STEPS"
if [ "$rc" != 0 ]; then
    say "unpacking the kit failed (exit $rc): see logs"
fi
PROJECT="$ROOT"
if [ -f "$KIT/project.tar.gz" ]; then
    PROJECT="$WORK/project"
    mkdir -p "$PROJECT" && tar -xzf "$KIT/project.tar.gz" -C "$PROJECT"
    say "project: the kit's $(cat "$KIT/project.rev" 2>/dev/null)"
fi
# read above; the sessions' records would report them as settings they are not
unset BPSPERF_KIT BPSPERF_KIT_PYTHON BPSPERF_KIT_CPU BPSPERF_KIT_DEADLINE BPSPERF_KIT_DTYPES BPSPERF_KIT_ARGS \
    BPSPERF_KIT_SESSIONS BPSPERF_KIT_REPEATS
export PYTHONPATH="$SITE:$PROJECT${PYTHONPATH:+:$PYTHONPATH}"
export BPSPERF_BACKEND=torch RAY_TMPDIR="$WORK/r" RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1 MPLBACKEND=Agg
# The plugin's pytest11 entry point exists only where the project is installed.
PLUGIN=()
if ! "$PY" -c 'import sys, importlib.metadata as m
eps = m.entry_points()
eps = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", ())  # Python 3.9
sys.exit(0 if any(e.value.split(":")[0] == "pytest_bpsperf.plugin" for e in eps) else 1)'; then
    PLUGIN=(-p pytest_bpsperf.plugin)
fi
SIZES=()
RECORD=()
if [ "$CPU" = 1 ]; then
    export CUDA_VISIBLE_DEVICES=""
    SIZES=(--bpsperf-steps=6 --bpsperf-image-size=32 --bpsperf-batch-size=4)
    # 6 steps of a shared small CPU spread far more than a baseline may (20%): what is checked here is
    # that the kit runs, not what it measures
    RECORD=(--bpsperf-force-update)
fi

# -- the machine --------------------------------------------------------------------------
(
    cd "$PROJECT" || exit 1
    echo "# machine"
    if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1; else echo "nvidia-smi: not on PATH"; fi
    echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
    timeout 120 "$PY" - <<'EOF' 2>&1
import ray, jsonschema, pytest, pytest_bpsperf
from pytest_bpsperf import backends
print(f"ray {ray.__version__} from {ray.__file__}")
print(f"jsonschema from {jsonschema.__file__}")
print(f"pytest {pytest.__version__}; pytest_bpsperf from {pytest_bpsperf.__file__}; backends {backends.names()}")
try:
    import torch, torchvision
except ImportError as exc:
    print(f"torch: {exc}")
else:
    cuda = torch.cuda.is_available()
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if cuda else None
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, CUDA {torch.version.cuda}, NCCL {nccl}, "
          f"GPU {torch.cuda.get_device_name(0) if cuda else None}")
EOF
    "$PY" -m pytest_bpsperf.cli --help >/dev/null 2>&1 && echo "bpsperf CLI: python3 -m pytest_bpsperf.cli works" ||
        echo "bpsperf CLI: python3 -m pytest_bpsperf.cli failed"
) >"$LOGS/machine.txt"
cat "$LOGS/machine.txt" >&2

# -- the sessions -------------------------------------------------------------------------
BASELINES="$WORK/baselines"
cp -r "$PROJECT/baselines" "$BASELINES" 2>/dev/null || mkdir -p "$BASELINES"
# README's `pytest -m perf`, with the plugin loaded where it is not installed; the project's sessions name
# perf_tests/, so that the plugin's own tests (which need more than the machine has) are not collected
# One trick and no scaling reference: on the H200 a run takes about 35 s (10 s to start torch, CUDA and
# NCCL, 16-21 s for the first 10 steps, cuDNN's autotuning, then 3 s for the other 90), and each trick's
# reference adds two runs; 8 minutes hold a baseline of 3 runs, a gate and 3 pairs of one trick.
# BPSPERF_KIT_ARGS comes last and so overrides these (--bpsperf-tricks=default,omp-passive --bpsperf-scaling).
SUITE=(--bpsperf-tricks=default --bpsperf-no-scaling)
PERF=("$PY" -m pytest "${PLUGIN[@]}" -m perf -p no:cacheprovider "${SUITE[@]}" "${SIZES[@]}" "${EXTRA[@]}")

# bench.py of the throwaway repository: the shipped torch model as an entry point; $1 (a line of
# Python or nothing) runs first in build(), which only the training processes call.
bench() {
    cat <<EOF
"""The shipped torch workload as an entry point."""
import os

from pytest_bpsperf.remote.torch_workload import build_model


def build(ctx):
$1
    return build_model(ctx)
EOF
}

# The throwaway repository of the base-vs-head session, two commits; prints the base commit. Without git,
# two folders (--bpsperf-base takes a directory of the base's code too); prints the base's folder.
make_pairs_repo() {
    local repo="$WORK/pairs"
    mkdir -p "$repo" && cd "$repo" || return 1
    printf '[pytest]\nmarkers =\n    perf: perf tests\nbpsperf_entry = bench:build\n' >pytest.ini
    printf 'import pytest\n\npytestmark = pytest.mark.perf\n\n\ndef test_resnet50(bpsperf_train):\n' >test_perf.py
    printf '    bpsperf_train().assert_within_baseline()\n' >>test_perf.py
    bench "" >bench.py
    if ! command -v git >/dev/null; then
        cp -r "$repo" "$WORK/pairs-base" || return 1
        bench '    os.environ["BPSPERF_FAULT"] = "slowdown:30"  # head: every step 30% longer' >bench.py
        echo "$WORK/pairs-base"
        return 0
    fi
    git init -q -b main && git add -A && git -c user.name=kit -c user.email=kit@localhost commit -qm base || return 1
    bench '    os.environ["BPSPERF_FAULT"] = "slowdown:30"  # head: every step 30% longer' >bench.py
    git add -A && git -c user.name=kit -c user.email=kit@localhost commit -qm "head: 30% slower" || return 1
    git rev-parse HEAD~1
}

first=1
for dtype in $DTYPES; do
    # the first precision's sessions must run; the others only where time is left
    optional=$((1 - first))
    first=0
    [[ $SESSIONS == *" record "* ]] && step "record-$dtype" 170 0 "$optional" "$PROJECT" "${PERF[@]}" perf_tests --bpsperf-baselines-dir="$BASELINES" --bpsperf-dtype="$dtype" \
        --bpsperf-update-baselines "${RECORD[@]}" --bpsperf-repeats="$REPEATS" --bpsperf-json="$OUT/record-$dtype.json" \
        --bpsperf-log-dir="$LOGS/roles-record-$dtype"
    [[ $SESSIONS == *" gate "* ]] && step "gate-$dtype" 110 0 "$optional" "$PROJECT" "${PERF[@]}" perf_tests --bpsperf-baselines-dir="$BASELINES" --bpsperf-dtype="$dtype" \
        --bpsperf-json="$OUT/gate-$dtype.json" --bpsperf-log-dir="$LOGS/roles-gate-$dtype"
    if [ "$dtype" = float32 ] && [[ $SESSIONS == *" pairs "* ]]; then
        if base="$(make_pairs_repo 2>>"$LOGS/gpu_run.log")"; then
            # three pairs at most (the fewest a verdict looks at): 6 runs, about 230 s on the H200; a
            # verdict still undecided then is inconclusive, and the session ends with its results
            step pairs 240 1 0 "$WORK/pairs" "${PERF[@]}" --bpsperf-base="$base" --bpsperf-max-pairs=3 \
                --bpsperf-json="$OUT/pairs.json" \
                --bpsperf-log-dir="$LOGS/roles-pairs"
        else
            say "pairs: the throwaway repository could not be made (git?)"
            printf 'pairs\tnot-made\t0\t1\t0\n' >>"$STEPS"
        fi
    fi
done

# -- summary and logs ---------------------------------------------------------------------
"$PY" - "$STEPS" "$OUT" "$LOGS" "$DEADLINE" $((SECONDS - T0)) <<'EOF' >"$OUT/summary.txt" 2>&1
import glob, json, os, re, sys
steps, out, logs, deadline, elapsed = sys.argv[1:]
print(open(os.path.join(logs, "machine.txt")).read().rstrip())
print(f"\n# sessions ({elapsed} s of {deadline} s before this summary)")
ok = True
for line in open(steps).read().splitlines():
    name, status, seconds, expected, optional = line.split("\t")
    good = status == expected or (status == "skipped" and optional == "1")
    ok &= good
    note = "" if good else "  UNEXPECTED"
    if status == "skipped":
        note = "  (skipped: too little time left)" + note
    print(f"{name:18} exit {status:8} {seconds:>4} s  expected {expected}{note}")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    print(f"\n# {os.path.basename(path)}")
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as exc:
        print(f"unreadable: {exc}")
        continue
    for run in doc.get("tests", []):
        key = dict(kv.split("=", 1) for kv in run.get("key", "").rsplit("|", 1)[-1].split(",") if "=" in kv)
        print(f"run {run.get('nodeid', '?')} {run.get('arm') or ''} {run.get('backend')} {key.get('dtype', '?')} "
              f"batch {key.get('batch_size', '?')} {key.get('image_size', '?')}px: "
              f"{run.get('img_per_sec') or 0:.1f} img/s, bring-up {run.get('bringup_s') or 0:.1f} s")
    for v in doc.get("verdicts", []):
        figures = ", ".join(f"{k} {v[k]:.1f}" for k in sorted(v) if k.endswith("img_per_sec") and isinstance(v[k], float))
        print(f"verdict {v.get('status', '?').upper()} {v.get('test')} [{v.get('trick')}]: {figures}")
    for f in doc.get("failures", []):
        print(f"failure: {str(f)[:300]}")
print("\n# img/s lines of the sessions' output")
for path in sorted(glob.glob(os.path.join(logs, "*.log"))):
    lines = [l.rstrip() for l in open(path, errors="replace") if "img/s" in l]
    for l in lines[:40]:
        print(f"{os.path.basename(path)}: {l}")
print("\nresult: " + ("every session ended as expected" if ok else "a session did not end as expected"))
EOF
cat "$OUT/summary.txt" >&2
tar -czf "$OUT/baselines.tar.gz" -C "$WORK" baselines
cp "$STEPS" "$LOGS/steps.tsv"
tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs
reap end
rm -rf "$WORK"
say "done in $((SECONDS - T0)) s: $(ls "$OUT" | tr '\n' ' ')"
grep -q "^result: every session ended as expected" "$OUT/summary.txt"
