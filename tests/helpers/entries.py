"""A user's training code for projects of real runs (an entry point, ``bpsperf_entry = bench:build``)."""

#: ``bench.py``: a small MLP and ``{extra}`` matrix products per step (fill it in with ``.format``).
ENTRY = '''"""A user's training step: a small MLP, and EXTRA matrix products per step (the code under test)."""
EXTRA = {extra}


def build(ctx):
    import mxnet as mx
    from mxnet import autograd, gluon

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(ctx.classes))
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    data, _ = ctx.next_batch()
    net(data)
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {{"learning_rate": 0.01}})
    extra = mx.nd.ones((192, 192), ctx=ctx.device)

    def step():
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(ctx.step_scale)
        for _ in range(EXTRA):
            mx.nd.dot(extra, extra).wait_to_read()

    return step
'''
