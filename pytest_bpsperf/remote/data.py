"""Training batches of a worker process: synthetic, or read from an ImageNet-style ``.rec``.

Runs in the worker. Either source is an endless supply of ``(data, label)``
on the training device, in the training dtype:

- synthetic: one random batch made once and reused (as BytePS's benchmarks do);
- records: MXNet's ``ImageRecordIter`` the way BytePS's ImageNet example
  reads ImageNet: JPEG decoding on ``threads`` threads, its training
  augmentation (random resized crop, mirror, colour jitter, PCA lighting
  noise, mean/std), shuffled, sharded across the job's worker processes
  (``num_parts`` = worker processes, ``part_index`` = this one's rank), its
  pinned memory on this rank's own GPU (``device_id``). At the end of its
  shard it starts over (``reset``), so a run never runs out.
"""

from __future__ import annotations

import os
from typing import Any, Callable


class DataError(RuntimeError):
    """The data cannot be read as asked; the message says why."""


class Batches:
    """An endless supply of ``(data, label)`` batches on the training device."""

    def __init__(self, next_batch: Callable[[], tuple], iterator: Any = None, kind: str = "synthetic") -> None:
        self._next = next_batch
        #: the underlying ``mx.io.ImageRecordIter`` for record data, None for synthetic data
        self.iterator = iterator
        self.kind = kind

    def next(self) -> tuple:
        """The next ``(data, label)``."""
        return self._next()


def synthetic(batch_size: int, image_size: int, classes: int, device: Any, dtype: str) -> Batches:
    """One random batch, made once, returned every time."""
    import mxnet as mx

    data = mx.nd.random.uniform(shape=(batch_size, 3, image_size, image_size), ctx=device).astype(dtype)
    label = mx.nd.array([i % classes for i in range(batch_size)], ctx=device)
    return Batches(lambda: (data, label))


def records(
    path: str, *, batch_size: int, image_size: int, threads: int, rank: int, parts: int, device: Any, dtype: str
) -> Batches:
    """Batches decoded from the ``.rec`` at ``path`` (its ``.idx`` beside it), shard ``rank`` of ``parts``."""
    import mxnet as mx

    idx = path[: -len(".rec")] + ".idx" if path.endswith(".rec") else path + ".idx"
    # MXNet names the .rec when the index is missing, which misleads: check both here.
    for p in (path, idx):
        if not os.path.isfile(p):
            raise DataError(f"record data: {p} does not exist (a .rec needs its .idx beside it)")
    if not 0 <= rank < parts:
        raise DataError(f"record data: shard {rank} of {parts} does not exist")
    # The training augmentation of BytePS's (and gluoncv's) ImageNet example: random resized
    # crop, mirror, colour jitter, PCA lighting noise, mean/std normalization. device_id: the
    # iterator's pinned host memory belongs to this rank's GPU (the default, 0, would open a
    # CUDA context on GPU 0 from every local rank).
    device_id = getattr(device, "device_id", 0) if getattr(device, "device_type", "cpu") == "gpu" else 0
    jitter, lighting = 0.4, 0.1
    iterator = mx.io.ImageRecordIter(
        path_imgrec=path,
        path_imgidx=idx,
        data_shape=(3, image_size, image_size),
        batch_size=batch_size,
        mean_r=123.68,
        mean_g=116.779,
        mean_b=103.939,
        std_r=58.393,
        std_g=57.12,
        std_b=57.375,
        rand_mirror=True,
        random_resized_crop=True,
        max_aspect_ratio=4.0 / 3.0,
        min_aspect_ratio=3.0 / 4.0,
        max_random_area=1.0,
        min_random_area=0.08,
        brightness=jitter,
        saturation=jitter,
        contrast=jitter,
        pca_noise=lighting,
        shuffle=True,
        preprocess_threads=threads,
        num_parts=parts,
        part_index=rank,
        device_id=device_id,
    )

    def next_batch() -> tuple:
        try:
            batch = iterator.next()
        except StopIteration:
            iterator.reset()
            batch = iterator.next()
        data = batch.data[0].as_in_context(device)
        if dtype != "float32":
            data = data.astype(dtype)
        return data, batch.label[0].as_in_context(device)

    return Batches(next_batch, iterator, kind="records")
