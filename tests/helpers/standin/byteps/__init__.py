"""A stand-in for the BytePS package, for tests on machines without CUDA (see ``byteps.mxnet``)."""
