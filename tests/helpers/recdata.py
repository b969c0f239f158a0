"""A small ImageNet-style record file (.rec + .idx), made here without any download."""

from __future__ import annotations

import io
from pathlib import Path


def make_rec(directory: Path, images: int = 40, size: int = 40, classes: int = 10) -> Path:
    """Write ``images`` random JPEGs of ``size`` x ``size`` as ``train.rec`` + ``train.idx``; the .rec's path."""
    import mxnet as mx
    import numpy as np
    from PIL import Image

    directory.mkdir(parents=True, exist_ok=True)
    rec, idx = directory / "train.rec", directory / "train.idx"
    writer = mx.recordio.MXIndexedRecordIO(str(idx), str(rec), "w")
    rng = np.random.RandomState(0)
    try:
        for i in range(images):
            pixels = rng.randint(0, 256, size=(size, size, 3), dtype=np.uint8)
            buf = io.BytesIO()
            Image.fromarray(pixels).save(buf, format="JPEG")
            header = mx.recordio.IRHeader(0, float(i % classes), i, 0)
            writer.write_idx(i, mx.recordio.pack(header, buf.getvalue()))
    finally:
        writer.close()
    return rec
