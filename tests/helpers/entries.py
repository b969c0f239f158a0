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


#: ``pytest.ini`` of such a project. One OpenMP thread per role: on two cores the runs then agree to about
#: 2%, so that each session decides in a few pairs. The tolerance is the repository's, as a user would set it.
USER_INI = """[pytest]
markers =
    perf: performance tests
bpsperf_entry = bench:build
bpsperf_steps = 10
bpsperf_batch_size = 8
bpsperf_image_size = 16
bpsperf_omp_threads = 1
bpsperf_scaling = off
bpsperf_tolerance = 25%
"""
