#!/usr/bin/env python3
"""Writes pil_resample_cases.inc and pil_image_cases.inc beside it: what
Pillow 9.4 itself gives for the operations core/image/pil_resample.h and
pil_image.h port, as the FNV-1a 64-bit hash of each output's bytes (so the
committed reference is a few lines, and CI needs no Pillow).

Every input is made by pattern() below, which tests/testing/pil_pattern.h
makes the same way in C++: a 32-bit xorshift stream, either as raw bytes ("noise":
every byte, clipping and ringing everywhere), as a wrapped ramp plus a
little noise ("ramp": smooth areas and sharp edges), or as a grid of every
(x, y) byte pair ("grid": all 65,536 alpha/colour pairs at 256 x 256).

Usage (Debian's python3-pil 9.4.0, which upstream's padding_mask_crop
references also used):
  /usr/bin/python3 tests/unit/image/pil_reference.py
"""
import os
import sys

import numpy as np
import PIL
from PIL import Image, ImageOps

BANDS = {"L": 1, "RGB": 3, "RGBA": 4, "RGBa": 4}


def xorshift(state):
    state ^= (state << 13) & 0xFFFFFFFF
    state ^= state >> 17
    state ^= (state << 5) & 0xFFFFFFFF
    return state


def pattern(mode, width, height, kind, seed):
    """uint8 [height, width, bands] (see the docstring)."""
    bands = BANDS[mode]
    out = np.zeros((height, width, bands), np.uint8)
    state = seed
    for y in range(height):
        for x in range(width):
            for c in range(bands):
                state = xorshift(state)
                if kind == "noise":
                    v = state >> 24
                elif kind == "ramp":
                    v = (x * 255 // max(width - 1, 1) + y * 97 // max(height - 1, 1) + c * 40 + (state >> 28)) % 256
                else:  # grid
                    v = (x, (x + y) % 256, (3 * x) % 256, y)[c] if bands == 4 else (x ^ y ^ (c * 85)) % 256
                out[y, x, c] = v
    return out


def image(mode, width, height, kind, seed):
    a = pattern(mode, width, height, kind, seed)
    return Image.frombytes(mode, (width, height), a.tobytes())


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def digest(im):
    """(mode, width, height, hash) of a Pillow image's bands, unpadded."""
    data = np.asarray(im) if im.mode != "RGBa" else np.frombuffer(im.tobytes(), np.uint8)
    return im.mode, im.width, im.height, fnv1a(data.tobytes())


def spec(mode, width, height, kind, seed):
    return f'{{"{mode}", {width}, {height}, "{kind}", {seed}u}}'


def output(im):
    mode, width, height, h = digest(im)
    return f'{{"{mode}", {width}, {height}, 0x{h:016x}ull}}'


RESIZES = [  # (input spec, output size, box or None, filter)
    (("L", 23, 17, "noise", 1), (40, 24), None, "LANCZOS"),
    (("RGB", 23, 17, "noise", 2), (9, 7), None, "LANCZOS"),
    (("RGB", 64, 48, "ramp", 3), (80, 48), None, "LANCZOS"),  # horizontal pass only
    (("RGB", 64, 48, "ramp", 4), (64, 30), None, "LANCZOS"),  # vertical pass only
    (("RGB", 50, 37, "ramp", 5), (37, 50), None, "LANCZOS"),
    (("L", 30, 20, "ramp", 6), (17, 13), (2.5, 1.25, 27.75, 18.5), "LANCZOS"),  # a fractional box
    (("RGB", 40, 30, "noise", 7), (40, 5), (0, 0, 40, 0), "LANCZOS"),  # boxes of no height
    (("RGB", 40, 30, "noise", 8), (40, 5), (0, 30, 40, 30), "LANCZOS"),
    (("RGB", 40, 30, "ramp", 9), (6, 30), (0, 0, 0, 30), "LANCZOS"),  # ... and of no width
    (("L", 40, 30, "ramp", 10), (6, 30), (40, 0, 40, 30), "LANCZOS"),
    (("RGB", 40, 30, "noise", 11), (20, 15), (5, 4, 25, 19), "LANCZOS"),  # an integer box of the output's size: a crop
    (("RGB", 40, 30, "noise", 12), (40, 30), None, "LANCZOS"),  # the same size: a copy
    (("RGB", 40, 30, "noise", 13), (40, 30), (1, 0, 40, 30), "LANCZOS"),  # the same size, another box
    (("RGBA", 23, 17, "noise", 14), (31, 11), None, "LANCZOS"),  # premultiplied
    (("L", 1, 1, "noise", 15), (5, 3), None, "LANCZOS"),
    (("RGB", 113, 67, "ramp", 16), (16, 16), None, "LANCZOS"),  # a factor of 7: wide kernels
    (("RGB", 7, 5, "noise", 17), (113, 67), None, "LANCZOS"),
    (("RGB", 103, 62, "ramp", 18), (80, 48), None, "LANCZOS"),
    # Bicubic, Image.resize's default filter, which _resize_and_fill's edge strips use.
    (("RGB", 40, 30, "noise", 19), (40, 5), (0, 0, 40, 0), "BICUBIC"),
    (("RGB", 40, 30, "noise", 20), (40, 1), (0, 30, 40, 30), "BICUBIC"),
    (("L", 40, 30, "ramp", 21), (7, 30), (0, 0, 0, 30), "BICUBIC"),
    (("RGB", 40, 30, "ramp", 22), (3, 30), (40, 0, 40, 30), "BICUBIC"),
    (("RGB", 23, 17, "noise", 23), (40, 24), None, "BICUBIC"),
    (("RGB", 113, 67, "ramp", 24), (16, 9), None, "BICUBIC"),
    (("L", 30, 20, "noise", 25), (17, 13), (2.5, 1.25, 27.75, 18.5), "BICUBIC"),
    (("RGBA", 23, 17, "noise", 26), (11, 31), None, "BICUBIC"),
]


def resize_rows():
    rows = []
    for k, (inp, size, box, name) in enumerate(RESIZES):
        out = image(*inp).resize(size, getattr(Image.Resampling, name), box=box)
        floats = ", ".join(f"{float(v)!r}f" for v in (box or (0, 0, 0, 0)))
        cpp = "PilFilter::kLanczos" if name == "LANCZOS" else "PilFilter::kBicubic"
        rows.append(f'    {{"resize{k}", {spec(*inp)}, {size[0]}, {size[1]}, {cpp}, {str(box is not None).lower()}, '
                    f'{{{floats}}}, {output(out)}}},')
    return rows


def op_row(name, inputs, out, x=0, y=0):
    ins = ", ".join(spec(*i) for i in inputs)
    return f'    {{"{name}", {{{ins}}}, {x}, {y}, {output(out)}}},'


def op_rows():
    rows = []
    conversions = [("L", "RGB"), ("L", "RGBA"), ("RGB", "L"), ("RGB", "RGBA"), ("RGBA", "RGB"), ("RGBA", "RGBa"),
                   ("RGBa", "RGBA")]
    for k, (a, b) in enumerate(conversions):
        inp = (a, 256, 256, "grid", 20 + k)
        rows.append(op_row(f"convert_{a}_{b}", [inp], image(*inp).convert(b)))
    for k, (dest, src, x, y) in enumerate([(("RGB", 20, 15, "noise", 30), ("L", 9, 7, "ramp", 31), 15, -3),
                                           (("RGBA", 20, 15, "noise", 32), ("RGB", 9, 7, "ramp", 33), -4, 10),
                                           (("RGB", 20, 15, "noise", 34), ("RGB", 30, 30, "ramp", 35), 0, 0)]):
        out = image(*dest)
        out.paste(image(*src), (x, y))
        rows.append(op_row(f"paste{k}", [dest, src], out, x, y))
    for k, mode in enumerate(("RGBa", "RGBA", "RGB", "L")):
        dest, src = (mode, 64, 64, "noise", 40 + k), (mode, 64, 64, "ramp", 50 + k)
        mask = ("L", 64, 64, "noise", 60 + k)
        out = image(*dest)
        out.paste(image(*src), (0, 0), image(*mask))
        rows.append(op_row(f"paste_masked_{mode}", [dest, src, mask], out))
    inp = ("L", 256, 256, "grid", 70)
    rows.append(op_row("invert", [inp], ImageOps.invert(image(*inp))))
    for k, (dest, src) in enumerate([(("RGBA", 256, 256, "grid", 71), ("RGBA", 256, 256, "noise", 72)),
                                     (("RGBA", 64, 64, "noise", 73), ("RGBA", 64, 64, "noise", 74))]):
        rows.append(op_row(f"alpha_composite{k}", [dest, src],
                           Image.alpha_composite(image(*dest), image(*src))))
    return rows


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if PIL.__version__ != "9.4.0":
        sys.exit(f"Pillow {PIL.__version__}: the references are Pillow 9.4.0's (upstream's references used it)")
    here = os.path.dirname(os.path.abspath(__file__))
    header = "// Generated by tests/unit/image/pil_reference.py with Pillow 9.4.0; do not edit."
    write(os.path.join(here, "pil_resample_cases.inc"), [
        header, "// {name, input, width, height, filter, has_box, box,",
        "//  {output mode, width, height, FNV-1a 64 of its bytes}}",
        "const PilResizeCase kPilResizeCases[] = {", *resize_rows(), "};"])
    write(os.path.join(here, "pil_image_cases.inc"), [
        header, "// {name, {inputs}, a paste's x and y, {output mode, width, height, FNV-1a 64 of its bytes}}",
        "const PilOpCase kPilOpCases[] = {", *op_rows(), "};"])


if __name__ == "__main__":
    main()
