"""float8_e4m3fn encoding in numpy (torch 1.13 has no float8 dtypes).

e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7f / 0xff are NaN; largest
finite 448; subnormals m * 2^-9. Encoding rounds to nearest, ties to even, as torch's float32 ->
float8_e4m3fn cast does; magnitudes above 464 (halfway to the next would-be value) become NaN like
torch's cast (no saturation). `self_test` checks the encoder against a brute-force nearest search;
`scaled_fp8_file` builds ComfyUI's scaled-fp8 weight files.
"""

import numpy as np
import torch

# Positive codes 0..126 decode to increasing values, so a sorted search finds the neighbours.
_POS = np.array([(c & 7) * 2.0 ** -9 if c >> 3 == 0 else (1 + (c & 7) / 8) * 2.0 ** ((c >> 3) - 7)
                 for c in range(127)], dtype=np.float64)


def decode_table():
    """float32 value of each of the 256 codes (NaN for 0x7f / 0xff)."""
    table = np.concatenate([_POS, [np.nan], -_POS, [np.nan]]).astype(np.float32)
    table[128] = -0.0
    return table


def encode(x):
    """Returns the uint8 e4m3fn codes of float32 array `x` (round to nearest even)."""
    x = np.asarray(x, dtype=np.float32)
    mag = np.abs(x).astype(np.float64).ravel()
    hi = np.clip(np.searchsorted(_POS, mag, side="left"), 1, 126)  # _POS[hi - 1] < mag <= _POS[hi]
    lo = hi - 1
    d_lo, d_hi = mag - _POS[lo], _POS[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(pick_hi, hi, lo)
    code = np.where(mag <= _POS[0], 0, code)
    code = np.where(mag > 448.0, np.where(mag > 464.0, 127, 126), code)
    code = np.where(np.isnan(mag), 127, code)
    sign = np.signbit(x.ravel()).astype(np.int64) << 7
    return (code | sign).astype(np.uint8).reshape(x.shape)


def round_trip(x):
    """float32 -> e4m3fn -> float32."""
    return decode_table()[encode(x)]


def self_test(count=120000, seed=0):
    """Checks `encode` against a brute-force nearest-value oracle on edge cases and random values
    (within +-464); returns a one-line summary, raises AssertionError on a mismatch."""
    table = decode_table().astype(np.float64)
    finite = np.where(np.isnan(table), np.inf, table)
    edges = [0.0, -0.0, 2.0 ** -10, 2.0 ** -9, 1.5 * 2.0 ** -9, 2.0 ** -6, 0.9375 * 2.0 ** -6, 1.0, 1.0625,
             1.125, 448.0, 456.0, 464.0, -464.0, 440.0, 432.0, 0.5, 3.0 * 2.0 ** -10, 2.5 * 2.0 ** -9,
             15.5, 17.0, 18.0, 19.0, -19.0]
    rng = np.random.default_rng(seed)
    values = np.concatenate([np.array(edges), rng.standard_normal(count // 2) * 10.0,
                             np.exp(rng.uniform(-12, 6.1, count - count // 2)) * rng.choice([-1, 1], count - count // 2)])
    values = np.clip(values, -464.0, 464.0).astype(np.float32)
    ours = encode(values)
    for v, code in zip(values.astype(np.float64), ours):
        dist = np.abs(finite - v)
        best = np.flatnonzero(dist == dist.min())
        best = [b for b in best if (np.signbit(table[b]) == np.signbit(v)) or table[b] != 0] or list(best)
        want = min(best, key=lambda b: (b & 1, b)) if len(best) > 1 else best[0]
        if v == 0:
            want = 128 if np.signbit(v) else 0
        assert table[code] == table[want], (v, code, want)
    return f"{len(edges)} edge cases + {len(values) - len(edges)} values vs brute-force oracle: OK"


def scaled_fp8_file(original_state, names):
    """ComfyUI's legacy "scaled fp8" file: each weight in `names` becomes uint8 e4m3fn codes of w / s with
    `<layer>.scale_weight` = s = max|w| / 448 (float32, shape [1] as ComfyUI's files hold it); everything
    else stays BF16; marker `scaled_fp8` = an empty F8_E4M3 tensor. Returns (tensors, dtypes,
    dequantised) -- the last is what a loader computes: float(q) * s, other tensors unchanged."""
    tensors, dtypes, dequantised = {}, {}, {}
    for name, w in original_state.items():
        if name in names:
            s = (w.abs().max() / 448.0).to(torch.float32)
            q = encode((w / s).numpy())
            layer = name[: -len(".weight")]
            tensors[name], dtypes[name] = torch.from_numpy(q), "F8_E4M3"
            tensors[layer + ".scale_weight"], dtypes[layer + ".scale_weight"] = s.reshape([1]), "F32"
            dequantised[name] = torch.from_numpy(decode_table()[q]) * s
        else:
            tensors[name], dtypes[name] = w, "BF16"
            dequantised[name] = w
    tensors["scaled_fp8"], dtypes["scaled_fp8"] = torch.zeros([0], dtype=torch.uint8), "F8_E4M3"
    return tensors, dtypes, dequantised
