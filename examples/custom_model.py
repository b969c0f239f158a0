"""Your own training code under pytest-bpsperf: a small Gluon CNN as an entry point.

Point the setting ``entry`` at ``build`` (``examples.custom_model:build`` from
the project root) and the plugin trains this instead of a model-zoo network,
with the roles, kvstore or BytePS, data, timing, tricks and verdicts it
always uses. ``build`` runs once in every worker process; the step it returns
is timed, followed by one ``mx.nd.waitall()``.
"""

from __future__ import annotations

from typing import Any, Callable


def build(ctx: Any) -> Callable[[], None]:
    """Build the model and trainer for this worker; return one training step."""
    import mxnet as mx
    from mxnet import autograd, gluon

    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(16, kernel_size=3, padding=1, activation="relu"),
        gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(32, kernel_size=3, padding=1, activation="relu"),
        gluon.nn.GlobalAvgPool2D(),
        gluon.nn.Dense(ctx.classes),
    )
    if ctx.dtype != "float32":
        net.cast(ctx.dtype)
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize(static_alloc=True, static_shape=True)
    data, _ = ctx.next_batch()
    net(data)  # parameters exist before the trainer is made (BytePS broadcasts them)
    mx.nd.waitall()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {"learning_rate": ctx.lr, "momentum": 0.9})

    def step() -> None:
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        ctx.split()  # end of compute with timing=breakdown; nothing with timing=overlapped
        trainer.step(ctx.step_scale)

    return step
