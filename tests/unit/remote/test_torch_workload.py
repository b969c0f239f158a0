"""``remote/torch_workload.py``: a torch rank's context, precision, split step and checksum, in one process (CPU).

Real torch, no process group (backend ``local``, the scaling reference's): the distributed run itself is
tested end to end in ``tests/e2e/test_e2e_torch.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.remote import torch_workload
from pytest_bpsperf.remote.workload import parse_args

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")


def local_context(dtype="float32", model="resnet18", breakdown=False, marks=None):
    args = parse_args(
        ["--backend", "local", "--framework", "torch", "--steps", "3", "--batch-size", "2", "--image-size", "16"]
        + ["--records", "unused", "--dtype", dtype, "--model", model, "--classes", "10"]
    )
    ctx, wait, facts = torch_workload.setup(
        args, lambda: (marks if marks is not None else []).append("split"), lambda: breakdown
    )
    return ctx, wait, facts


def test_the_command_line_picks_torch_and_its_default_model():
    args = parse_args(
        ["--backend", "torch", "--steps", "3", "--batch-size", "2", "--image-size", "16", "--records", "r"]
    )
    assert (args.framework, args.model) == ("torch", "resnet50")
    args = parse_args(
        ["--backend", "local", "--steps", "3", "--batch-size", "2", "--image-size", "16", "--records", "r"]
    )
    assert (args.framework, args.model) == ("mxnet", "resnet50_v2")


def test_the_start_record_facts_name_the_stack_and_the_precision():
    _ctx, _wait, facts = local_context(dtype="bfloat16")
    assert facts["framework"] == "torch" and facts["dist_backend"] is None and facts["world_size"] == 1
    assert facts["torch"] == torch.__version__ and facts["precision"] == "bfloat16"
    assert facts["gpu"] is None and facts["compute_capability"] is None  # on the CPU


def test_a_step_trains_and_changes_the_parameters_in_every_precision():
    for dtype in ("float32", "bfloat16"):
        ctx, wait, _facts = local_context(dtype=dtype)
        step = torch_workload.build_model(ctx)
        before = torch_workload.param_checksum(ctx)
        step()
        wait()
        assert torch_workload.param_checksum(ctx) != before, dtype
    assert ctx.autocast() is not None and isinstance(ctx._model, torch.nn.Module)


def test_the_data_is_one_batch_per_rank_seeded_by_the_rank():
    a = torch_workload._synthetic(torch.device("cpu"), 2, 16, 10, rank=0)
    b = torch_workload._synthetic(torch.device("cpu"), 2, 16, 10, rank=1)
    assert torch.equal(a.next()[0], a.next()[0])  # made once
    assert not torch.equal(a.next()[0], b.next()[0])
    assert torch.equal(a.next()[0], torch_workload._synthetic(torch.device("cpu"), 2, 16, 10, rank=0).next()[0])


def test_a_split_step_marks_the_end_of_compute_in_backward():
    marks: "list[str]" = []
    ctx, _wait, _facts = local_context(breakdown=True, marks=marks)
    torch_workload.build_model(ctx)()
    assert marks == ["split"]
    marks.clear()
    ctx, _wait, _facts = local_context(breakdown=False, marks=marks)
    torch_workload.build_model(ctx)()
    assert marks == []  # overlapped: DDP's allreduce is not split from backward


def test_an_unknown_model_names_torchvisions_similar_ones():
    ctx, _wait, _facts = local_context(model="resnet51")
    with pytest.raises(
        torch_workload.TorchWorkloadError, match=r"'resnet51' is not one of torchvision's.*similar: .*resnet50"
    ):
        torch_workload.build_model(ctx)


def test_float16_needs_a_gpu():
    with pytest.raises(torch_workload.TorchWorkloadError, match="float16 needs a GPU"):
        local_context(dtype="float16")


def test_a_rank_without_its_rendezvous_variables_says_which(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(torch_workload.TorchWorkloadError, match="needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"):
        torch_workload._join_group(on_gpu=False)


def test_the_interface_of_the_loopback_address_is_found():
    assert torch_workload._interface_of("127.0.0.1") == "lo"
    assert torch_workload._interface_of("192.0.2.1") is None  # TEST-NET-1: on no interface


def test_the_allreduce_of_a_split_step_averages_every_gradient(monkeypatch):
    import torch.distributed as dist

    model = torch.nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    sent = []
    # two ranks with these same gradients: the allreduce sums them (x2) in one flat buffer, then / world size
    monkeypatch.setattr(dist, "all_reduce", lambda flat: sent.append(flat.numel()) or flat.mul_(2))
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    torch_workload._allreduce_gradients(model)
    assert sent == [sum(p.numel() for p in model.parameters())]  # one buffer, every gradient
    assert all(torch.equal(a, p.grad) for a, p in zip(before, model.parameters()))
