"""Your own PyTorch training code under pytest-bpsperf: a small CNN as an entry point (backend torch).

Point the setting ``entry`` at ``build`` (``examples.custom_torch_model:build``
from the project root) with ``backend=torch``, and the plugin trains this
instead of torchvision's ResNet-50, with the roles, process group, data,
timing, tricks and verdicts it always uses. ``build`` runs once in every rank
with a :class:`pytest_bpsperf.TorchContext`; the step it returns is timed,
followed by one device sync per window of steps.
"""

from __future__ import annotations

from typing import Any, Callable


def build(ctx: Any) -> Callable[[], None]:
    """Build the model and optimizer of this rank; return one training step."""
    import torch
    from torch import nn

    torch.manual_seed(0)  # the same first weights on every rank (DDP also broadcasts rank 0's)
    model = ctx.distribute(  # on ctx.device, wrapped in DistributedDataParallel
        nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, ctx.classes),
        )
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=ctx.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        data, label = ctx.next_batch()
        optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():  # the precision setting: float32, float16 (GPU) or bfloat16
            loss = loss_fn(model(data), label)
        ctx.backward(loss)  # scaled for float16; split into compute and allreduce in diagnostic steps
        ctx.step(optimizer)

    return step
