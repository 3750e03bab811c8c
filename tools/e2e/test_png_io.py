"""Tests of png_io.py, the end-to-end scripts' PNG reading and writing.

Run: python3 tools/e2e/test_png_io.py
"""
import os
import random
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import png_io  # noqa: E402


def noise(n, seed):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


class PngIoTest(unittest.TestCase):
    def test_round_trip_per_filter_and_colour_type(self):
        for channels in (1, 3):
            pixels = noise(7 * 5 * channels, channels)
            for filter_type in range(5):
                png = png_io.encode_png(pixels, 7, 5, channels, filter_type)
                self.assertEqual(png_io.decode_png(png), (pixels, 7, 5, channels), (channels, filter_type))

    def test_rgb_reader_takes_rgb_only(self):
        pixels = noise(4 * 2 * 3, 7)
        self.assertEqual(png_io.decode_png_rgb8(png_io.encode_png(pixels, 4, 2, 3)), (pixels, (4, 2)))
        with self.assertRaisesRegex(ValueError, "expected RGB, got 1 channel"):
            png_io.decode_png_rgb8(png_io.encode_png(bytes(8), 4, 2, 1))

    def test_refuses_what_it_does_not_read(self):
        with self.assertRaisesRegex(ValueError, "not a PNG"):
            png_io.decode_png(b"GIF89a")
        rgba = bytearray(png_io.encode_png(bytes(12), 2, 2, 3))
        rgba[8 + 8 + 9] = 6  # IHDR colour type: RGBA (the CRC is not checked)
        with self.assertRaisesRegex(ValueError, "colour type 6"):
            png_io.decode_png(bytes(rgba))
        with self.assertRaisesRegex(ValueError, "need 12 bytes, got 11"):
            png_io.encode_png(bytes(11), 2, 2, 3)

    def test_chunks_are_well_formed(self):
        png = png_io.encode_png(bytes(range(6)), 2, 1, 3)
        pos, kinds = 8, []
        while pos < len(png):
            length = int.from_bytes(png[pos:pos + 4], "big")
            kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
            self.assertEqual(int.from_bytes(png[pos + 8 + length:pos + 12 + length], "big"), zlib.crc32(kind + body))
            kinds.append(kind)
            pos += 12 + length
        self.assertEqual(kinds, [b"IHDR", b"IDAT", b"IEND"])


if __name__ == "__main__":
    unittest.main()
