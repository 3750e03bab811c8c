"""Wan 2.2's two experts through the daemon under a RAM budget that holds one:
a Denoise that crosses the boundary lets the first expert go and loads the
second, evicting the first; the client reloads the first for the next call.
The step events say which model ran each step and what was evicted or loaded
for it, and the budget's high-water mark shows nothing over-committed.

The experts are Wan transformers made here (wan_expert): 6 blocks of width
256, ~27 MB each at float32 (so one expert and a step's ~10 MiB of
activations fit in the budget, and two experts do not), their weights zero
(a hole in a sparse file), so they cost no disk and only memory is
meaningful."""

import json
import math
import struct
import unittest

import diffusiond_client as dc
from daemon_fixture import DaemonTestCase, assert_finite_latents, models_dir

DIM, FFN, TEXT_DIM, LAYERS = 256, 1024, 32, 6
LATENT_SHAPE = (16, 1, 8, 8)  # [C, F, H, W]: one frame of 64x64 pixels


def wan_parameters():
    """WanTransformer3DModel's parameters (diffusers names) at DIM / FFN / TEXT_DIM / LAYERS."""
    params = {}
    for i in range(LAYERS):
        b = f"blocks.{i}."
        for attn in ("attn1", "attn2"):
            for proj in ("to_q", "to_k", "to_v", "to_out.0"):
                params[f"{b}{attn}.{proj}.weight"] = [DIM, DIM]
                params[f"{b}{attn}.{proj}.bias"] = [DIM]
            params[f"{b}{attn}.norm_q.weight"] = [DIM]
            params[f"{b}{attn}.norm_k.weight"] = [DIM]
        params.update({f"{b}ffn.net.0.proj.weight": [FFN, DIM], f"{b}ffn.net.0.proj.bias": [FFN],
                       f"{b}ffn.net.2.weight": [DIM, FFN], f"{b}ffn.net.2.bias": [DIM],
                       f"{b}norm2.weight": [DIM], f"{b}norm2.bias": [DIM], f"{b}scale_shift_table": [1, 6, DIM]})
    c = "condition_embedder."
    params.update({f"{c}text_embedder.linear_1.weight": [DIM, TEXT_DIM], f"{c}text_embedder.linear_1.bias": [DIM],
                   f"{c}text_embedder.linear_2.weight": [DIM, DIM], f"{c}text_embedder.linear_2.bias": [DIM],
                   f"{c}time_embedder.linear_1.weight": [DIM, 256], f"{c}time_embedder.linear_1.bias": [DIM],
                   f"{c}time_embedder.linear_2.weight": [DIM, DIM], f"{c}time_embedder.linear_2.bias": [DIM],
                   f"{c}time_proj.weight": [6 * DIM, DIM], f"{c}time_proj.bias": [6 * DIM],
                   "patch_embedding.weight": [DIM, 16, 1, 2, 2], "patch_embedding.bias": [DIM],
                   "proj_out.weight": [64, DIM], "proj_out.bias": [64], "scale_shift_table": [1, 2, DIM]})
    return params


def wan_expert(name):
    """Writes a Wan expert folder named ``name`` in models_dir() (once) and returns its float32 bytes."""
    params = wan_parameters()
    folder = models_dir() / name
    if not (folder / "config.json").exists():
        folder.mkdir(exist_ok=True)
        header, offset = {}, 0
        for key, shape in sorted(params.items()):
            size = 2 * math.prod(shape)  # bf16
            header[key] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(folder / "diffusion_pytorch_model.safetensors", "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            f.truncate(8 + len(text) + offset)  # zeros, as a hole
        config = {"_class_name": "WanTransformer3DModel", "attention_head_dim": 128, "cross_attn_norm": True,
                  "eps": 1e-6, "ffn_dim": FFN, "freq_dim": 256, "in_channels": 16, "num_attention_heads": DIM // 128,
                  "num_layers": LAYERS, "out_channels": 16, "patch_size": [1, 2, 2],
                  "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 1024, "text_dim": TEXT_DIM}
        (folder / "config.json").write_text(json.dumps(config))
    return 4 * sum(math.prod(shape) for shape in params.values())


def text(length=8):
    values = [((i * 37) % 17) / 17.0 - 0.5 for i in range(length * TEXT_DIM)]
    return {"encoder_hidden_states": dc.WireTensor.from_floats(values, (length, TEXT_DIM))}


EXPERT_BYTES = wan_expert("wan-high")
wan_expert("wan-low")


class TwoExpertsInABudgetForOneTest(DaemonTestCase):
    # One expert and its activations fit, two experts do not (float32
    # weights: FP8 storage off and the bf16 weights widened, so EXPERT_BYTES
    # is what a load holds).
    daemon_options = {
        "ram_budget": str(EXPERT_BYTES * 3 // 2),
        "extra_args": ("--fp8", "off", "--narrow_weights", "false"),
    }

    def ram(self):
        return next(b for b in self.client.stats().budgets if b.device == "cpu")

    def denoise_both(self):
        steps = []
        latents = self.client.denoise("high", text(), shape=LATENT_SHAPE, seed=5, sigmas=[1.0, 0.75, 0.5, 0.25],
                                      on_step=steps.append, expert_2="wan-low", boundary_ratio=0.6,
                                      guidance_scale_2=1.0)
        assert_finite_latents(self, latents, LATENT_SHAPE)
        return steps

    def test_the_switch_evicts_the_first_expert_and_a_reload_brings_it_back(self):
        self.assertLess(self.ram().capacity_bytes, 2 * EXPERT_BYTES)
        evictions = self.client.stats().evictions
        for call in range(2):
            with self.subTest(call=call):
                info = self.client.load_model("wan-high", model_id="high")
                self.assertGreater(info.ram_bytes, self.ram().capacity_bytes // 2)
                steps = self.denoise_both()
                self.assertEqual([s.model_id for s in steps], ["high", "high", "wan-low", "wan-low"])
                # The first step of each expert says what was readied for it.
                self.assertEqual([list(s.evicted_model_ids) for s in steps], [[], [], ["high"], []])
                self.assertEqual([s.model_loaded for s in steps], [False, False, True, False])
                # The switch's cost is reported with it, and only with it.
                self.assertGreater(steps[2].load_seconds, 0)
                self.assertEqual([s.load_seconds for s in steps[:2] + steps[3:]], [0, 0, 0])
                self.assertEqual([m.model_id for m in self.client.list_models()], ["wan-low"])
        # Each reload of the first evicted the second, and each switch the first.
        self.assertEqual(self.client.stats().evictions - evictions, 3)
        ram = self.ram()
        self.assertLessEqual(ram.high_water_bytes, ram.capacity_bytes)
        self.assertGreater(ram.high_water_bytes, EXPERT_BYTES)


if __name__ == "__main__":
    unittest.main()
