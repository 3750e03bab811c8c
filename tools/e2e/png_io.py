"""8-bit PNG encoding and decoding with the standard library only (zlib,
struct), for the end-to-end scripts: the references' init images and masks
are written with encode_png, the daemon's images are read with decode_png.

Only what those need: 8-bit grey (colour type 0) or RGB (colour type 2),
not interlaced. Pixels are row-major bytes, `channels` per pixel. Not here:
palettes, alpha, 16-bit samples (the daemon reads those; these scripts never
write them).
"""
import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3}  # colour type -> samples per pixel
_COLOUR_TYPE = {1: 0, 3: 2}


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _filter_row(kind, line, prev, bpp):
    """The row as filter `kind` (0-4) stores it; `prev` is the raw row above."""
    out = bytearray(len(line))
    for x, value in enumerate(line):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        predictor = (0, a, b, (a + b) // 2, _paeth(a, b, c))[kind]
        out[x] = (value - predictor) & 255
    return bytes(out)


def encode_png(pixels, width, height, channels, filter_type=0):
    """Returns an 8-bit PNG of `pixels` (bytes, [height, width, channels],
    channels 1 = grey or 3 = RGB), every row stored with `filter_type`
    (0 none; 1-4 exist so the decoder's unfiltering can be tested)."""
    stride = width * channels
    if len(pixels) != height * stride:
        raise ValueError(f"{width}x{height}x{channels} pixels need {height * stride} bytes, got {len(pixels)}")
    raw, prev = bytearray(), bytes(stride)
    for y in range(height):
        line = bytes(pixels[y * stride:(y + 1) * stride])
        raw += bytes([filter_type]) + _filter_row(filter_type, line, prev, channels)
        prev = line
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[channels], 0, 0, 0)
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + _chunk(b"IEND", b"")


def decode_png(png):
    """Returns (pixels, width, height, channels) of an 8-bit grey or RGB,
    non-interlaced PNG; ValueError for anything else."""
    if png[:8] != _SIGNATURE:
        raise ValueError("not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in _CHANNELS or interlace != 0:
                raise ValueError(f"expected 8-bit grey or RGB without interlacing, got depth {depth}, "
                                 f"colour type {colour}, interlace {interlace}")
            channels = _CHANNELS[colour]
        elif kind == b"IDAT":
            idat += body
    raw, stride = zlib.decompress(idat), width * channels
    out, prev = bytearray(), bytearray(stride)
    for y in range(height):
        row = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, line = row[0], bytearray(row[1:])
        if kind > 4:
            raise ValueError(f"row {y} has filter type {kind}, not one of 0-4")
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = prev[x], prev[x - channels] if x >= channels else 0
            line[x] = (line[x] + (0, a, b, (a + b) // 2, _paeth(a, b, c))[kind]) & 255
        out += line
        prev = line
    return bytes(out), width, height, channels


def decode_png_rgb8(png):
    """The pixels of an 8-bit RGB PNG (what the daemon writes) as bytes
    [H, W, 3], and (W, H); ValueError for another kind."""
    pixels, width, height, channels = decode_png(png)
    if channels != 3:
        raise ValueError(f"expected RGB, got {channels} channel(s)")
    return pixels, (width, height)
