#!/usr/bin/env bash
# The built wheel, as a user gets it: a fresh venv and a throwaway git repository of its own.
#
#   scripts/acceptance.sh dist/pytest_bpsperf-0.1.0-py3-none-any.whl
#
# 1. The wheel without the extra, into a venv that already has numpy ($NUMPY): no MXNet
#    distribution arrives and numpy stays at the version it had; `bpsperf` runs.
# 2. In the throwaway repository (one unit test, one perf test, addopts "-m 'not perf'"):
#    plain `pytest` runs the unit test untouched by the plugin: it passes, the perf test is
#    deselected, the output says nothing of bpsperf beyond pytest's plugin list, every line of it
#    is pytest's own (none of a dependency), and the repository is left as it was.
# 3. The same wheel with the extra [mxnet]: one MXNet distribution, importable; plain `pytest`
#    as in 2; `pytest -m perf` with small settings runs the perf test for real (embedded Ray,
#    MXNet's parameter server): a run with img/s in its JSON report, skipped as no-baseline,
#    and `bpsperf check` reads that report. MXNet 1.9.1 has wheels up to Python 3.11: on a later
#    PYTHON the extra installs nothing, and the checks are instead that no MXNet arrived and that
#    `pytest -m perf` is a usage error, before Ray, that names the Python and backend torch.
#
# Needs python3 with venv, git, and a package index with the wheel's dependencies.
# Environment: PYTHON (default python3), NUMPY (the numpy the venv has before, default
# 2.2.6), KEEP=1 (keep the work directory).
# Exit status: 0 when every check passed, 1 otherwise.
set -uo pipefail

wheel="${1:?usage: scripts/acceptance.sh PATH/TO/pytest_bpsperf-*.whl}"
wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
PYTHON="${PYTHON:-python3}"
NUMPY="${NUMPY:-2.2.6}"
work="$(mktemp -d "${TMPDIR:-/tmp}/wheel-acceptance.XXXXXX")"
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
start=$SECONDS
failed=()

say() { printf 'acceptance: %s\n' "$*"; }
pass() { say "PASS  $1 ($2 s)"; }
fail() { say "FAIL  $1: $2"; failed+=("$1"); }

# check NAME COMMAND...: run it, PASS or FAIL with the end of its output.
check() {
    local name="$1" t0=$SECONDS out
    shift
    if out="$("$@" 2>&1)"; then
        pass "$name" $((SECONDS - t0))
        [ -z "$out" ] || printf '%s\n' "$out" | grep -v '^WARNING: Location .* is ignored' | tail -1 | sed 's/^/    /'
    else
        fail "$name" "exit $?; output ends:"
        printf '%s\n' "$out" | tail -25 | sed 's/^/    /'
    fi
}

venv="$work/venv"
py="$venv/bin/python"
pipq() { "$py" -m pip install -q --disable-pip-version-check "$@"; }

# --- the throwaway repository ------------------------------------------------------------
repo="$work/user-repo"
mkdir -p "$repo/tests"
cat >"$repo/pyproject.toml" <<'EOF'
[tool.pytest.ini_options]
# perf tests only when asked for: pytest -m perf
addopts = "-m 'not perf'"
EOF
cat >"$repo/tests/test_unit.py" <<'EOF'
def test_addition():
    assert 1 + 1 == 2
EOF
cat >"$repo/tests/test_perf.py" <<'EOF'
import pytest

pytestmark = pytest.mark.perf


def test_training_throughput(bpsperf_train):
    bpsperf_train().assert_within_baseline()
EOF
printf '.pytest_cache/\n__pycache__/\nout/\n' >"$repo/.gitignore"
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=acceptance -c user.email=acceptance@localhost -c commit.gpgsign=false commit -q -m "a user's repository"

# Plain pytest, as the user runs it: passes the unit test, deselects the perf test, says
# nothing of bpsperf (pytest's plugin list aside) and writes nothing into the repository.
plain_pytest_untouched() {
    local out
    out="$(cd "$repo" && "$venv/bin/pytest" 2>&1)" || { printf '%s\n' "$out"; return 1; }
    printf '%s\n' "$out" | grep -q "1 passed, 1 deselected" || { printf '%s\n' "$out"; echo "expected: 1 passed, 1 deselected"; return 1; }
    if printf '%s\n' "$out" | grep -v -e '^plugins:' -e '^rootdir:' | grep -qi bpsperf; then
        printf '%s\n' "$out"; echo "expected no bpsperf output"; return 1
    fi
    # Every line is pytest's own: nothing of the plugin's dependencies either (pytest-benchmark, when it
    # was one, printed its header line in every session).
    local other
    other="$(printf '%s\n' "$out" | grep -v -E -e '^$' -e '^=+ (test session starts|1 passed, 1 deselected in .*) =+$' \
        -e '^(platform |rootdir: |configfile: |plugins: |collected )' -e '^tests/test_unit\.py \. +\[100%\]$')"
    [ -z "$other" ] || { printf '%s\n' "$out"; echo "expected only pytest's own lines, also got:"; printf '%s\n' "$other"; return 1; }
    [ -z "$(git -C "$repo" status --porcelain)" ] || { git -C "$repo" status --short; echo "the session wrote into the repository"; return 1; }
}

# --- 1. without the extra ----------------------------------------------------------------
fresh_venv() { "$PYTHON" -m venv "$venv" && pipq "numpy==$NUMPY"; }
no_mxnet() {
    local found
    found="$("$py" - <<'EOF'
import importlib.metadata as md
names = {d.metadata["Name"] or "" for d in md.distributions()}
print(" ".join(sorted(n for n in names if n.lower().replace("_", "-").startswith(("mxnet", "gluoncv", "byteps")))))
EOF
)" || return 1
    echo "found: ${found:-none}"
    [ -z "$found" ]
}
numpy_version() { "$py" -c 'import numpy; print(numpy.__version__)'; }
numpy_unchanged() { local now; now="$(numpy_version)" || return 1; echo "numpy $now"; [ "$now" = "$numpy_before" ]; }

check "fresh venv with numpy $NUMPY" fresh_venv
numpy_before="$(numpy_version 2>/dev/null)" || numpy_before="(none)"
check "pip install the wheel without the extra" pipq "$wheel"
check "no MXNet, gluoncv or BytePS installed" no_mxnet
check "numpy left as it was ($numpy_before)" numpy_unchanged
check "pip check" "$py" -m pip check
check "bpsperf --version" "$venv/bin/bpsperf" --version
# The plugin resolves and checks its settings (the default model against gluoncv's zoo among
# them) only once perf tests are selected to run: without gluoncv a plain session is untouched.
check "plain pytest without the extra runs the unit test untouched" plain_pytest_untouched

# --- 2. with the extra -------------------------------------------------------------------
check "pip install the wheel with the extra [mxnet]" pipq "$wheel[mxnet]"
check "pip check (with the extra)" "$py" -m pip check
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
# the extra's markers (pyproject.toml): its requirements hold up to Python 3.11, MXNet 1.9.1's newest wheels
if "$py" -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
    one_mxnet() {
        "$py" -c 'from pytest_bpsperf.remote.preflight import distributions_providing as d; found = d("mxnet"); print(found); assert len(found) == 1' &&
            "$py" -c 'import importlib.metadata as md, mxnet, gluoncv; print("mxnet", mxnet.__version__, "gluoncv", md.version("gluoncv"))'
    }
    check "one MXNet distribution, importable" one_mxnet
    check "plain pytest with the extra runs the unit test untouched" plain_pytest_untouched

    perf_run() {
        cd "$repo" && "$venv/bin/pytest" -m perf -p no:cacheprovider -rs \
            --bpsperf-steps=10 --bpsperf-no-scaling --bpsperf-timeout=300 \
            --bpsperf-json=out/results.json || return 1
        "$venv/bin/bpsperf" check out/results.json || return 1
        "$py" - <<'EOF'
import json
results = json.load(open("out/results.json"))
runs = results["tests"]
assert len(runs) == 1 and runs[0]["img_per_sec"] > 0, runs
print(f"one run: {runs[0]['img_per_sec']:.1f} img/s")
EOF
    }
    check "pytest -m perf runs the perf test" perf_run
else
    check "the extra installs no MXNet on Python $pyver (MXNet 1.9.1 has no wheels for it)" no_mxnet
    check "plain pytest with the extra runs the unit test untouched" plain_pytest_untouched
    perf_refused() {
        local out rc
        out="$(cd "$repo" && "$venv/bin/pytest" -m perf -p no:cacheprovider 2>&1)"
        rc=$?
        printf '%s\n' "$out" | grep '^ERROR: ' | tail -1
        [ "$rc" = 4 ] || { printf '%s\n' "$out"; echo "expected a usage error (exit 4), got exit $rc"; return 1; }
        printf '%s\n' "$out" | grep -q "MXNet 1.9.1 has no wheels for Python $pyver" || { echo "expected the Python named"; return 1; }
        printf '%s\n' "$out" | grep -q -- "--bpsperf-backend=torch" || { echo "expected backend torch named"; return 1; }
        ! printf '%s\n' "$out" | grep -q "embedded on 127.0.0.1; start" || { echo "Ray started"; return 1; }
    }
    check "pytest -m perf is a usage error naming Python $pyver and backend torch" perf_refused
fi

say "$(( ${#failed[@]} )) failed, in $((SECONDS - start)) s (work directory $work$([ "${KEEP:-}" = 1 ] || echo ', removed'))"
[ ${#failed[@]} -eq 0 ]
