"""Writes the browser example's bundle (examples/browser/bundle): max pooling of a
256 x 256 RGBA image, 4 x 4 windows at stride 4, in the canvas's own byte layout.

    python examples/browser/make_bundle.py

A canvas's pixels (``getImageData``) are RGBA bytes, row after row: as a DirectML tensor,
UINT8 of sizes {1, 4, 256, 256} (N, C, H, W) at strides {262144, 1, 1024, 4}, channels
last.  The output takes the same layout, so the page turns bytes into pixels without
converting anything.
"""

import dataclasses
from pathlib import Path

import poolgpu as pg

SIZE = 256
WINDOW = 4


def channels_last(sizes):
    n, c, h, w = sizes
    return pg.TensorDesc("uint8", sizes, (h * w * c, 1, w * c, c))


def description() -> pg.MaxPoolingDesc:
    """The page's operator: max pooling of the canvas's RGBA bytes."""
    out = SIZE // WINDOW
    return pg.MaxPoolingDesc(channels_last((1, 4, SIZE, SIZE)), channels_last((1, 4, out, out)),
                             window_size=(WINDOW, WINDOW), strides=(WINDOW, WINDOW))


#: Bundles usually run on GPUs: the GPU preset (pg.export's default), but the channels walk's
#: loops (channels_written_out off): a browser without a GPU runs WebGPU on SwiftShader, which
#: takes minutes to compile the walk written out (docs/portable.md).
TUNING = dataclasses.replace(pg.Tuning.for_gpu(), channels_written_out=False)


if __name__ == "__main__":
    print(pg.export(description(), Path(__file__).resolve().parent / "bundle", tuning=TUNING))
