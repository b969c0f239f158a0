"""GPU smoke check for one accelerator machine: what the BytePS path needs, measured around the worker.

    python3 scripts/gpu_smoke.py --out gpu-facts.json [--bpslaunch PATH] [--cpu-only]

Written for a machine with one GPU, Python 3.12, PyTorch, torchvision and
pytest, and no MXNet, no Ray and no network: there is no CUDA MXNet for its
Python, so the BytePS worker itself cannot run there. Everything around it
is checked for real and written to one JSON file (about 2 minutes):

0. BytePS itself, where ``byteps.mxnet`` imports: the plugin's BytePS preflight
   (a scheduler, a server and one worker on one GPU, ``/dev/shm`` checked, one
   push_pull) and a few training steps through a server, started by the
   plugin's own role-process code from its own plan (no Ray); where it does not
   import, the entry says what was skipped and why. Either way: whether the
   documented stack (CUDA 11.2, mxnet-cu112) runs on this machine's GPUs;
1. machine facts: GPUs and driver (``nvidia-smi``), NUMA nodes, ``/dev/shm``,
   threads per core, numactl, Python;
2. the plugin on this Python: imports, the GPU defaults, the byteps plan of a
   single GPU machine (one worker node with all its GPUs, the default);
3. a role process started through the plugin's own role-process code sees
   exactly the plan's GPU (its UUID against ``nvidia-smi``);
4. the real ``launch.py`` of BytePS (``--bpslaunch``, one file, carried; else
   the installed ``bpslaunch``) over a stand-in whose ranks write records
   slowly: progress per rank, pinning;
5. a torchvision ResNet-50 stand-in (batch 64, 224 px, fp32 and fp16
   autocast, cuDNN autotune on) timed with a sync every step and every 10
   steps, its first-step time, and warm-up detection through the plugin's own
   measurement code;
6. the GPU memory one extra CUDA context on GPU 0 costs.

``--cpu-only`` runs the parts that need no GPU (the tests run it; under the
BytePS stand-in of the tests, part 0 runs on the CPU too), ``--parts`` some
of them. A part that cannot run says why in its entry instead of failing the
whole check; a part whose role process fails carries the end of that role's
log (``log``, or ``logs`` per role).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: Lines of a failed role's log in its part's entry: the reason it failed is at the end.
LOG_TAIL = 20


def _run(cmd: "list[str]", timeout: float = 60) -> "tuple[int, str]":
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def machine_facts() -> dict:
    """GPUs, NUMA, shared memory, threads per core, numactl, Python."""
    code, gpus = _run(
        ["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,driver_version", "--format=csv,noheader"]
    )
    numa = (
        sorted(p for p in os.listdir("/sys/devices/system/node") if p.startswith("node"))
        if os.path.isdir("/sys/devices/system/node")
        else None
    )
    shm = shutil.disk_usage("/dev/shm") if os.path.isdir("/dev/shm") else None
    _c, lscpu = _run(["lscpu"])
    threads = next(
        (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Thread(s) per core")), None
    )
    from pytest_bpsperf.remote.bpslaunch import has_numactl

    return {
        "python": platform.python_version(),
        "nvidia_smi": gpus.splitlines() if code == 0 else f"not available: {gpus[:200]}",
        "proc_driver_nvidia_gpus": os.path.isdir("/proc/driver/nvidia/gpus"),
        "numa_nodes": numa,
        "dev_shm_gib": round(shm.total / 2**30, 1) if shm else None,
        "threads_per_core": threads,
        "numactl_dpkg": has_numactl(),
        "numactl_on_path": shutil.which("numactl") is not None,
        "cores": len(os.sched_getaffinity(0)),
    }


def plugin_checks() -> dict:
    """The plugin imports here; GPU defaults; the byteps plan of this machine as the defaults make it."""
    from pytest_bpsperf import backends, stats  # noqa: F401 (stats: that it imports here)
    from pytest_bpsperf.backends import byteps_timeline  # noqa: F401
    from pytest_bpsperf.config.settings import Hardware, resolve
    from pytest_bpsperf.config.tricks import TrickRegistry
    from pytest_bpsperf.judge import measurement  # noqa: F401
    from pytest_bpsperf.launch import watchdog  # noqa: F401
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    hw = Hardware.detect()
    settings = resolve([], hw, backends.workload_defaults)
    out = {
        "hardware": {"gpus": hw.gpus, "cores": hw.cores, "gpu_nodes": hw.gpu_nodes},
        "defaults": {k: getattr(settings, k) for k in ("workers", "steps", "batch_size", "image_size", "omp_threads")},
    }
    gpus = max(1, hw.gpus)
    node = Node("this", "127.0.0.1", float(hw.cores), gpus, "this machine")
    s = resolve([], Hardware(gpus=gpus, cores=hw.cores), backends.workload_defaults).with_values(backend="byteps")
    plan = make_plan(s, TrickRegistry().get("default"), [node], backend=backends.get("byteps"), run_id="smoke")
    workers = plan.by_role("worker")
    out["byteps_plan"] = {
        "workers": s.workers,
        "worker_processes": plan.worker_processes,
        "roles": [r.name for r in plan.roles],
        "worker_env": [
            {
                k: r.env.get(k)
                for k in (
                    "CUDA_VISIBLE_DEVICES",
                    "NVIDIA_VISIBLE_DEVICES",
                    "BYTEPS_LOCAL_RANK",
                    "BYTEPS_LOCAL_SIZE",
                    "BYTEPS_FORCE_DISTRIBUTED",
                    "DMLC_NUM_WORKER",
                )
            }
            for r in workers
        ],
        "ok": s.workers == 1 and len(workers) == gpus,
    }
    return out


PROBE = """
import json, os, subprocess, sys
out = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
try:
    import torch
    out["device_count"] = torch.cuda.device_count()
    if out["device_count"]:
        props = torch.cuda.get_device_properties(0)
        out["name"] = props.name
        out["uuid"] = str(getattr(props, "uuid", ""))
except Exception as exc:
    out["torch"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def role_process_sees_the_plans_gpu(tmp: str) -> dict:
    """A process started by the plugin's role-process code with the plan's worker env sees that GPU alone."""
    from pytest_bpsperf.remote.roles import RoleProcess, read_environ

    env = {
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "0",
        "BYTEPS_LOCAL_RANK": "0",
        "BYTEPS_LOCAL_SIZE": "1",
        "BPSPERF_RUN_ID": "smoke",
    }
    role = RoleProcess("worker-0.0", os.path.join(tmp, "role"))
    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # what the actor holds must not leak in: the plan decides
    try:
        pid = role.start(["{python}", "-c", PROBE], env)
        seen = read_environ(pid) or {}
        code = role.wait(120)
    finally:
        role.stop()
        if saved is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved
    log = role.log_tail(50)
    lines = [line for line in log.splitlines() if line.startswith("{")]
    child = json.loads(lines[-1]) if lines else {}
    out = {"exit": code, "environ_cuda_visible_devices": seen.get("CUDA_VISIBLE_DEVICES"), "child": child}
    if code != 0 or not child:
        out["log"] = role.log_tail(LOG_TAIL)
    return out


RANKS = """
import importlib.util, json, os, sys, time
from pytest_bpsperf.remote.environ import rank_records_path
rank = os.environ["BYTEPS_LOCAL_RANK"]
with open(rank_records_path(sys.argv[1], rank), "w") as fh:
    env = {k: v for k, v in os.environ.items() if k.startswith(("BYTEPS_", "BPSPERF_"))}
    fh.write(json.dumps({"event": "start", "batch_size": 4, "affinity": sorted(os.sched_getaffinity(0)),
                         "env": env, "byteps": importlib.util.find_spec("byteps") is not None}) + "\\n")
    fh.flush()
    for i in range(int(sys.argv[2])):
        time.sleep(0.5)
        fh.write(json.dumps({"event": "step", "step": i, "total_s": 0.5, "images": 4}) + "\\n")
        fh.flush()
    fh.write(json.dumps({"event": "end"}) + "\\n")
"""


#: The stand-in ranks' GPUs (one rank each under bpslaunch) and the steps each writes.
RANK_GPUS = "0,1"
RANK_STEPS = 6


def real_bpslaunch(tmp: str, bpslaunch: "str | None") -> dict:
    """BytePS's own launcher over stand-in ranks, through the plugin's role process: progress and pinning.

    ``bpslaunch``: the launcher file given (BytePS's ``launcher/launch.py``), else the one the plugin finds
    installed; the role runs it by name (``--launcher``), whatever else is installed or on ``PATH``.
    """
    from pytest_bpsperf.remote.bpslaunch import LAUNCHER_OPTION, find_bpslaunch
    from pytest_bpsperf.remote.roles import RoleProcess

    if bpslaunch is None:
        launcher = find_bpslaunch()
        if launcher is None:
            return {"skipped": "no bpslaunch installed: pass --bpslaunch PATH (BytePS's launcher/launch.py)"}
    elif os.path.isfile(bpslaunch):
        launcher = os.path.abspath(bpslaunch)
    else:
        return {"ok": False, "launcher": bpslaunch, "error": f"--bpslaunch {bpslaunch}: no such file"}
    script = os.path.join(tmp, "ranks.py")
    Path(script).write_text(RANKS)
    env = {
        "DMLC_ROLE": "worker",
        "DMLC_WORKER_ID": "0",
        "DMLC_NUM_WORKER": "1",
        "DMLC_NUM_SERVER": "1",
        "DMLC_PS_ROOT_URI": "127.0.0.1",
        "DMLC_PS_ROOT_PORT": "1",
        "NVIDIA_VISIBLE_DEVICES": RANK_GPUS,
        "CUDA_VISIBLE_DEVICES": RANK_GPUS,
        "BPSPERF_RUN_ID": "smoke",
    }
    role = RoleProcess("worker-0", os.path.join(tmp, "bpsl"))
    polls = []
    command = ["{python}", script, "{records}", str(RANK_STEPS)]
    try:
        role.start(["{python}", "-m", "pytest_bpsperf.remote.bpslaunch", LAUNCHER_OPTION, launcher, *command], env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and role.poll() is None:
            st = role.status()
            polls.append({k: st.get(k) for k in ("steps", "ranks", "finished")})
            time.sleep(0.5)
        code = role.wait(30)
    finally:
        role.stop()
    records = role.process_records()
    log = role.log_tail(80)
    ranks = [
        {
            "suffix": s,
            "steps": sum(r.get("event") == "step" for r in recs),
            "affinity": (recs[0] if recs else {}).get("affinity"),
            "pinning": ((recs[0] if recs else {}).get("env") or {}).get("BPSPERF_PINNING"),
            "byteps_importable": (recs[0] if recs else {}).get("byteps"),
        }
        for s, recs in records
    ]
    # every GPU's rank wrote every step, and the launcher exited 0
    ok = code == 0 and [r["steps"] for r in ranks] == [RANK_STEPS] * len(RANK_GPUS.split(","))
    out = {
        "ok": ok,
        "launcher": launcher,
        "exit": code,
        "polls": polls,
        "max_steps_seen": max((p["steps"] or 0) for p in polls) if polls else 0,
        "ranks": ranks,
        "log_pinning": [line for line in log.splitlines() if "bpsperf: bpslaunch" in line or "NUMA" in line],
    }
    if not ok:
        out["log"] = role.log_tail(LOG_TAIL)
    return out


BYTEPS_IMPORTS = "import byteps.mxnet, sys; print(getattr(byteps.mxnet, 'SIMULATION', ''))"


def _run_plan_here(plan, log_dir: str, timeout: float) -> dict:
    """Every role of ``plan`` as a process of this machine, through the plugin's role-process code (no Ray):
    each role's exit status, the workers' records, the end of each log."""
    from pytest_bpsperf.remote.roles import RoleProcess, hold_port

    held = hold_port("127.0.0.1")  # held while the roles run: the scheduler binds it beside (SO_REUSEADDR)
    root = {"DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": str(held.getsockname()[1])}
    roles = {r.name: RoleProcess(r.name, log_dir) for r in plan.roles}
    try:
        for r in plan.roles:
            roles[r.name].start(list(r.command), {**r.env, **root})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(p.poll() is None for p in roles.values()):
            time.sleep(0.5)
    finally:
        codes = {name: p.poll() for name, p in roles.items()}
        for p in roles.values():
            p.stop()
        held.close()
    return {
        "exit": codes,
        "records": {r.name: roles[r.name].records() for r in plan.by_role("worker")},
        "logs": {name: p.log_tail(LOG_TAIL) for name, p in roles.items() if codes[name] != 0},
    }


def byteps_runs(tmp: str, cpu_only: bool) -> dict:
    """The BytePS preflight and a few training steps, where byteps.mxnet imports; else what was skipped."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.backends.byteps import PushPullProbe
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.config.tricks import Trick
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.remote.gpu_stack import mxnet_cuda, node_gpus, stack_problem
    from pytest_bpsperf.runs.plan import Node

    gpus = node_gpus()
    out: dict = {
        "gpus": [{"index": i, "name": n, "compute_capability": c} for i, n, c in gpus],
        "mxnet_cuda": mxnet_cuda(),
        "documented_stack": stack_problem(gpus, ((11, 2), "mxnet-cu112"))
        or ("runs here" if gpus else "no GPU seen (nvidia-smi)"),
    }
    code, said = _run([sys.executable, "-c", BYTEPS_IMPORTS], timeout=300)
    if code != 0:
        out["skipped"] = (
            f"byteps.mxnet does not import here ({said.splitlines()[-1] if said else code}): the "
            "BytePS preflight and training steps need BytePS's MXNet plugin against a CUDA MXNet "
            "(examples/docker/Dockerfile.gpu)"
        )
        return out
    out["simulation"] = said.strip() or None
    # the plugin's own plans of one worker node on one GPU of this machine, its servers beside it
    sizes = (
        {"model": "mobilenet0.25", "steps": "6", "batch_size": "4", "image_size": "32"}
        if cpu_only
        else {"steps": "30", "batch_size": "64", "image_size": "224"}
    )
    settings = resolve(
        [
            Source(
                "cli",
                "smoke",
                {"backend": "byteps", "workers": "1", "gpus_per_worker": "1", "omp_threads": "2", **sizes},
            )
        ],
        Hardware(gpus=max(1, len(gpus)), cores=os.cpu_count() or 1),
        backends.workload_defaults,
    )
    node = [Node("this", "127.0.0.1", float(os.cpu_count() or 1), max(1, len(gpus)), "this machine")]
    preflight = _run_plan_here(
        make_plan(settings, Trick("default"), node, backend=PushPullProbe(), run_id="smoke-pre"),
        os.path.join(tmp, "preflight"),
        300,
    )
    steps = [r for recs in preflight["records"].values() for r in recs if r.get("event") == "step"]
    out["preflight"] = {
        "exit": preflight["exit"],
        "value": steps[0]["value"] if steps else None,
        "push_pull_s": steps[0]["total_s"] if steps else None,
        "logs": preflight["logs"],
    }
    if any(preflight["exit"].values()):
        out["training"] = {"skipped": "the preflight failed"}
        return out
    from pytest_bpsperf.judge.measurement import measure_worker
    from pytest_bpsperf.runs.output import WorkerRecords

    plan = make_plan(settings, Trick("default"), node, backend=backends.get("byteps"), run_id="smoke-train")
    run = _run_plan_here(plan, os.path.join(tmp, "train"), 900)
    out["training"] = {
        "exit": run["exit"],
        "logs": run["logs"],
        "settings": {k: getattr(settings, k) for k in ("model", "steps", "batch_size", "image_size", "sync_every")},
    }
    for name, recs in run["records"].items():
        if any(r.get("event") == "end" for r in recs):
            m = measure_worker(WorkerRecords(name, "this", tuple(recs)))
            out["training"][name] = {
                "img_per_sec": m.img_per_sec,
                "windows": sum(r.get("event") == "step" for r in recs),
                "warmup": list(m.steady.warmup_steps),
            }
    return out


TIMING = """
import json, sys, time
import torch, torchvision
from pytest_bpsperf.runs.output import WorkerRecords
from pytest_bpsperf.judge.measurement import measure_worker
steps, every, dtype = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda:0")
net = torchvision.models.resnet50().to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
data = torch.randn(64, 3, 224, 224, device=dev)
label = torch.randint(0, 1000, (64,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()
recs = [{"event": "start", "batch_size": 64}]
t_start = time.perf_counter()
first = None
window = 0
for s0 in range(0, steps, every):
    t0 = time.perf_counter()
    for _ in range(min(every, steps - s0)):
        with torch.autocast("cuda", dtype=torch.float16, enabled=dtype == "float16"):
            loss = loss_fn(net(data), label)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    if first is None:
        first = time.perf_counter() - t_start
    n = min(every, steps - s0)
    recs.append({"event": "step", "step": window, "total_s": t, "images": 64 * n})
    window += 1
recs.append({"event": "end"})
m = measure_worker(WorkerRecords("gpu0", "this", tuple(recs)))
print(json.dumps({"img_per_sec": m.img_per_sec, "first_window_s": first, "warmup": list(m.steady.warmup_steps),
                  "steady_reliable": m.steady.reliable, "window_s": [r["total_s"] for r in recs[1:-1]]}))
"""


def timing_stand_in(tmp: str) -> dict:
    """ResNet-50 in torch: img/s with a sync every step and every 10 steps, fp32 and fp16; first-step time."""
    out = {}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for dtype in ("float32", "float16"):
        for every in (1, 10):
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", TIMING, "60", str(every), dtype],
                    capture_output=True,
                    text=True,
                    timeout=240,
                    env=env,
                )
                lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
                out[f"{dtype}_sync_every_{every}"] = (
                    json.loads(lines[-1]) if lines else {"error": proc.stderr.strip().splitlines()[-3:]}
                )
            except subprocess.TimeoutExpired:
                out[f"{dtype}_sync_every_{every}"] = {"error": "timed out after 240 s"}
    return out


CONTEXT = """
import sys, time, torch
x = torch.ones(1, device="cuda:0")
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""


def extra_context_memory() -> dict:
    """GPU 0's memory with 1 and with 4 processes that each hold one tensor there (one CUDA context each)."""

    def used() -> "list[int]":
        _c, text = _run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
        return [int(line.split(",")[1]) for line in text.splitlines() if "," in line]

    out = {}
    for n in (1, 4):
        procs = [
            subprocess.Popen([sys.executable, "-c", CONTEXT, "20"], stdout=subprocess.PIPE, text=True) for _ in range(n)
        ]
        try:
            for p in procs:
                p.stdout.readline()
            time.sleep(1)
            out[f"{n}_contexts_mib"] = used()
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--bpslaunch", default=None, help="BytePS's launcher/launch.py (or an installed bpslaunch)")
    p.add_argument("--cpu-only", action="store_true", help="only the parts that need no GPU")
    p.add_argument("--parts", default=None, help="comma-separated parts to run (default: all that apply)")
    args = p.parse_args()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="bpsperf-smoke-")
    parts = [
        ("byteps", lambda: byteps_runs(tmp, args.cpu_only)),
        ("machine", machine_facts),
        ("plugin", plugin_checks),
        ("bpslaunch", lambda: real_bpslaunch(tmp, args.bpslaunch)),
    ]
    if not args.cpu_only:
        parts += [
            ("role_gpu", lambda: role_process_sees_the_plans_gpu(tmp)),
            ("timing", lambda: timing_stand_in(tmp)),
            ("extra_context", extra_context_memory),
        ]
    if args.parts:
        chosen = set(args.parts.split(","))
        parts = [(name, part) for name, part in parts if name in chosen]
    facts: dict = {}
    for name, part in parts:
        t = time.monotonic()
        try:
            facts[name] = part()
        except Exception as exc:  # noqa: BLE001 - one part failing must not hide the others
            facts[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
        facts[name + "_s"] = round(time.monotonic() - t, 1)
        print(f"{name}: {json.dumps(facts[name])[:300]}", flush=True)
    facts["seconds"] = round(time.monotonic() - t0, 1)
    shutil.rmtree(tmp, ignore_errors=True)
    Path(args.out).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out} in {facts['seconds']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
