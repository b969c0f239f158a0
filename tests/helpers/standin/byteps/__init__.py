"""A stand-in for the BytePS package, for tests on machines without CUDA (see ``byteps.mxnet``).

``byteps.server`` runs MXNet's own parameter server (the stand-in's push_pulls travel through it);
``byteps.mxnet`` is the worker side, under the rules BytePS 0.2.5.post15's source states.
"""

__version__ = "0.2.5.post15+bpsperf.standin"
