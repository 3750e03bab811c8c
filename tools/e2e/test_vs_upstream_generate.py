"""Tests of vs_upstream_generate.py's cases, requests and comparison against
an in-process fake PipelineService that answers with the references (one
value of one image off by 2), so no daemon is needed.

Run: python3 tools/e2e/test_vs_upstream_generate.py
"""
import json
import os
import struct
import sys
import tempfile
import types
import unittest
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import png_io  # noqa: E402
import vs_upstream_generate as vs  # noqa: E402
from diffusiond_client import _stubs  # noqa: E402  (on the path vs_upstream_generate set)

_ps = _stubs.pipeline_service_pb2
W, H = 4, 2


def write_u8_safetensors(path, tensors):
    """{name: (bytes, shape)} as U8 tensors."""
    header, blob = {}, b""
    for name, (data, shape) in tensors.items():
        header[name] = {"dtype": "U8", "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + blob)


def pixels(level):
    return bytes((level + i) % 256 for i in range(W * H * 3))


class FakePipeline(_stubs.pipeline_service_pb2_grpc.PipelineServiceServicer):
    """Answers a Generate with the pixels listed for its prompt, one image each."""

    def __init__(self, answers):
        self.answers, self.requests = answers, []

    def Generate(self, request, context):
        self.requests.append(request)
        if request.num_frames:  # a video: its frames as PNGs, then the Video
            frames = self.answers[request.prompt]
            for k, data in enumerate(frames):
                yield _ps.GenerateEvent(frame=_ps.VideoFrame(png=png_io.encode_png(data, W, H, 3), index=0, frame=k))
            yield _ps.GenerateEvent(video=_ps.Video(width=W, height=H, frames=len(frames), fps=16, seed=request.seed,
                                                    index=0))
            return
        for index, data in enumerate(self.answers[request.prompt]):
            seed = request.seeds[index] if request.seeds else request.seed
            yield _ps.GenerateEvent(image=_ps.Image(png=png_io.encode_png(data, W, H, 3), width=W, height=H,
                                                    seed=seed, index=index))


class VsUpstreamTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        shared = {"name": "fox", "prompt": "a fox", "negative_prompt": "dark", "width": W, "height": H,
                  "steps": 3, "seed": 11, "upstream_guidance": 3.0, "daemon_guidance": 4.0}
        mode = {"name": "door", "mode": "inpaint", "prompt": "a door", "negative_prompt": "", "width": W,
                "height": H, "steps": 4, "seed": 0, "seeds": [13, 14], "guidance_scale": 0.0,
                "true_cfg_scale": 0.0, "strength": 0.8, "num_images_per_prompt": 2, "image": "init.png",
                "mask": "mask.png", "image_keys": ["door.image_u8.0", "door.image_u8.1"]}
        crop = dict(mode, name="crop", prompt="a crop", seed=5, seeds=[], num_images_per_prompt=0,
                    padding_mask_crop=0, image_keys=["crop.image_u8"])
        for name, cases in (("cases.json", [shared]), ("modes_cases.json", [mode]), ("mask_crop_cases.json", [crop])):
            with open(os.path.join(self.folder, name), "w") as f:
                json.dump({"pipeline_folder": "pipe", "cases": cases}, f)
        write_u8_safetensors(os.path.join(self.folder, "ref.safetensors"), {"fox.image_u8": (pixels(0), [H, W, 3])})
        write_u8_safetensors(os.path.join(self.folder, "modes_ref.safetensors"),
                             {"door.image_u8.0": (pixels(1), [H, W, 3]), "door.image_u8.1": (pixels(2), [H, W, 3])})
        write_u8_safetensors(os.path.join(self.folder, "mask_crop_ref.safetensors"),
                             {"crop.image_u8": (pixels(3), [H, W, 3])})
        self.init, self.mask = png_io.encode_png(pixels(5), W, H, 3), png_io.encode_png(bytes(W * H), W, H, 1)
        for name, data in (("init.png", self.init), ("mask.png", self.mask)):
            with open(os.path.join(self.folder, name), "wb") as f:
                f.write(data)
        off = bytearray(pixels(2))
        off[5] = (off[5] + 2) % 256
        self.fake = FakePipeline({"a fox": [pixels(0)], "a door": [pixels(1), bytes(off)], "a crop": [pixels(3)]})
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        _stubs.pipeline_service_pb2_grpc.add_PipelineServiceServicer_to_server(self.fake, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.client = vs.dc.Client(f"127.0.0.1:{port}", timeout=20)

    def tearDown(self):
        self.client.close()
        self.server.stop(None)

    def run_cases(self):
        pipeline, cases = vs.load_cases(self.folder)
        self.assertEqual((pipeline, [c["name"] for c in cases]), ("pipe", ["fox", "door", "crop"]))
        rows = []
        for c in cases:
            rows += vs.compare(self.folder, c, vs.generate(self.client, self.folder, pipeline, c))
        return rows

    def test_rows_per_image_against_the_references(self):
        self.assertEqual(self.run_cases(), [("fox", 0, 0, 24), ("door[0]", 0, 0, 24), ("door[1]", 2, 1, 24),
                                            ("crop", 0, 0, 24)])

    def test_requests_carry_upstream_guidance_pngs_and_seeds(self):
        self.run_cases()
        fox, door, crop = self.fake.requests
        self.assertEqual((fox.pipeline, fox.negative_prompt, fox.guidance_scale, fox.seed), ("pipe", "dark", 3.0, 11))
        self.assertEqual((door.image, door.mask_image, door.strength), (self.init, self.mask, 0.8))
        self.assertEqual((door.seed, list(door.seeds), door.num_images_per_prompt, door.negative_prompt),
                         (0, [13, 14], 2, ""))
        self.assertFalse(door.HasField("padding_mask_crop"))
        self.assertTrue(crop.HasField("padding_mask_crop"))  # 0 is sent: a crop to the mask's box
        self.assertEqual((crop.padding_mask_crop, crop.image, crop.seed), (0, self.init, 5))

    def test_a_video_case_compares_every_frame(self):
        case = {"name": "wave", "mode": "txt2img", "prompt": "a wave", "negative_prompt": "", "width": W, "height": H,
                "num_frames": 2, "steps": 2, "seed": 7, "seeds": [], "guidance_scale": None, "guidance_scale_2": 2.0,
                "true_cfg_scale": 0.0, "strength": 0.0, "num_images_per_prompt": 0, "image": "", "mask": "",
                "image_keys": [], "video_keys": ["wave.video_u8"], "ref": "video_ref.safetensors"}
        write_u8_safetensors(os.path.join(self.folder, "video_ref.safetensors"),
                             {"wave.video_u8": (pixels(3) + pixels(4), [2, H, W, 3])})
        off = bytearray(pixels(4))
        off[0] = (off[0] + 1) % 256
        self.fake.answers["a wave"] = [pixels(3), bytes(off)]
        rows = vs.compare(self.folder, case, vs.generate(self.client, self.folder, "pipe", case))
        self.assertEqual(rows, [("wave", 1, 1, 48)])
        sent = self.fake.requests[-1]
        self.assertEqual((sent.num_frames, sent.guidance_scale_2, sent.video_format, sent.HasField("guidance_scale")),
                         (2, 2.0, _ps.VIDEO_FORMAT_PNG_FRAMES, False))

    def test_a_lora_case_sends_its_adapters(self):
        lora = {"name": "glow", "mode": "txt2img", "prompt": "a glow", "negative_prompt": "", "width": W, "height": H,
                "steps": 3, "seed": 11, "seeds": [], "guidance_scale": 4.0, "true_cfg_scale": 0.0, "strength": 0.0,
                "num_images_per_prompt": 0, "image": "", "mask": "", "image_keys": ["glow.image_u8"],
                "adapters": [{"path": "lora_a.safetensors", "weight": 0.7},
                             {"path": "lora_b.safetensors", "weight": -0.3}]}
        with open(os.path.join(self.folder, "lora_cases.json"), "w") as f:
            json.dump({"pipeline_folder": "pipe", "cases": [lora]}, f)
        write_u8_safetensors(os.path.join(self.folder, "lora_ref.safetensors"),
                             {"glow.image_u8": (pixels(6), [H, W, 3])})
        _, cases = vs.load_cases(self.folder)
        self.assertEqual([(c["name"], c["ref"]) for c in cases][-1], ("glow", "lora_ref.safetensors"))
        # The wire's adapters field is the client's; what this script owes is the call.
        sent = []

        class Client:
            def generate(self, pipeline, prompt, negative_prompt, **kwargs):
                sent.append(kwargs)
                return types.SimpleNamespace(png=png_io.encode_png(pixels(6), W, H, 3), index=0, seed=kwargs["seed"])

        rows = vs.compare(self.folder, cases[-1], vs.generate(Client(), self.folder, "pipe", cases[-1]))
        self.assertEqual(rows, [("glow", 0, 0, 24)])
        self.assertEqual(sent[0]["adapters"], [("lora_a.safetensors", 0.7), ("lora_b.safetensors", -0.3)])
        self.assertNotIn("adapters", vs.generate_arguments(self.folder, cases[0]))

    def test_a_wrong_seed_is_reported(self):
        _, cases = vs.load_cases(self.folder)
        images = vs.generate(self.client, self.folder, "pipe", cases[1])
        with self.assertRaisesRegex(RuntimeError, "image 1 came as index 1, seed 14; expected index 1, seed 15"):
            vs.compare(self.folder, dict(cases[1], seeds=[13, 15]), images)


if __name__ == "__main__":
    unittest.main()
