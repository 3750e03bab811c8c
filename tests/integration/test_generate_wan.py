"""Generate of videos by a real daemon through Wan pipeline folders (UMT5
with its tokenizer, the transformer, the causal 3-D VAE; for Wan 2.2 a
second expert: random weights, real layouts; ``diffusiond-demo
--write_pipeline DIR --pipeline wan|wan22``): diffusionctl writes an MP4
that ffprobe reads as H.264 of the asked size, frame count and rate (skipped
where ffprobe is absent); the Python client gets the frames as PNGs, Wan
2.2's two experts with their own guidance; bad requests are refused before
any load.
"""

import json
import math
import shutil
import subprocess
import threading
import unittest

import diffusiond_client as dc
from daemon_fixture import Daemon, binary, daemon_env, models_dir, work_dir
from test_generate import png_size

WIDTH, HEIGHT, FRAMES = 64, 48, 5
_lock = threading.Lock()


def wan_models_dir():
    """Returns the models directory with the random Wan 2.1 and 2.2 pipelines written on first use."""
    models = models_dir()
    with _lock:
        for name, pipeline in (("wanpipe", "wan"), ("wan22pipe", "wan22")):
            if not (models / name / "model_index.json").exists():
                out = subprocess.run([binary("DIFFUSIOND_DEMO_BIN", "diffusiond-demo"), "--write_pipeline",
                                      str(models / name), "--pipeline", pipeline], stdin=subprocess.DEVNULL,
                                     capture_output=True, text=True, timeout=300)
                if out.returncode != 0:
                    raise AssertionError(f"--write_pipeline exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return models


def ffprobe(path):
    """The first video stream as ffprobe counts it."""
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=codec_name,width,height,nb_read_frames,r_frame_rate", "-of", "json", str(path)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"ffprobe exited {r.returncode}:\n{r.stderr}")
    return json.loads(r.stdout)["streams"][0]


class WanGenerateTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(wan_models_dir(), ram_budget="2GiB").start()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def ctl_generate(self, out, *extra):
        return subprocess.run([binary("DIFFUSIONCTL_BIN", "diffusionctl"), "--address", self.daemon.address,
                               "generate", "wanpipe", "--prompt", "a lighthouse at dawn", "--width", str(WIDTH),
                               "--height", str(HEIGHT), "--num_frames", str(FRAMES), "--steps", "2", "--seed", "5",
                               "--out", str(out), *extra], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300, env=daemon_env())

    @unittest.skipIf(shutil.which("ffprobe") is None, "no ffprobe")
    def test_diffusionctl_writes_an_mp4_that_ffprobe_reads(self):
        out = work_dir() / "wan.mp4"
        r = self.ctl_generate(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("denoise wanpipe/transformer", r.stderr)
        stream = ffprobe(out)
        self.assertEqual(stream["codec_name"], "h264")
        self.assertEqual((stream["width"], stream["height"]), (WIDTH, HEIGHT))
        self.assertEqual(int(stream["nb_read_frames"]), FRAMES)
        self.assertEqual(stream["r_frame_rate"], "16/1")

    def test_diffusionctl_writes_numbered_png_frames(self):
        out = work_dir() / "wan-frames.png"
        r = self.ctl_generate(out, "--video_format", "png_frames")
        self.assertEqual(r.returncode, 0, r.stderr)
        for k in range(FRAMES):
            self.assertEqual(png_size((work_dir() / f"wan-frames-{k:04d}.png").read_bytes()), (WIDTH, HEIGHT))
        self.assertFalse((work_dir() / f"wan-frames-{FRAMES:04d}.png").exists())

    def test_two_experts_with_their_own_guidance_through_the_python_client(self):
        with dc.Client(self.daemon.address, timeout=300) as client:
            progress = []
            video = client.generate_video("wan22pipe", "a lighthouse at dawn", width=WIDTH, height=HEIGHT,
                                          num_frames=FRAMES, steps=4, seed=5, guidance_scale=4.0,
                                          guidance_scale_2=2.0, video_format="png_frames", on_event=progress.append)
            self.assertEqual((video.width, video.height, video.frames, video.fps), (WIDTH, HEIGHT, FRAMES, 16))
            self.assertEqual(len(video.frame_pngs), FRAMES)
            self.assertEqual(png_size(video.frame_pngs[0]), (WIDTH, HEIGHT))
            self.assertEqual(video.mp4, b"")
            parameters = json.loads(video.parameters)
            self.assertEqual((parameters["guidance_scale"], parameters["guidance_scale_2"]), (4.0, 2.0))
            steps = [p.model_id for p in progress if isinstance(p, dc.GenerateProgress) and p.stage == "denoise"]
            self.assertEqual(steps, ["wan22pipe/transformer"] * 2 + ["wan22pipe/transformer_2"] * 2)

    def test_bad_requests_are_refused_before_any_load(self):
        with dc.Client(self.daemon.address, timeout=60) as client:
            before = {m.model_id for m in client.list_models()}
            for kwargs, says in (({"num_frames": 6}, "num_frames must be 1 + 4k"),
                                 ({"width": 40}, "multiples of 16"),
                                 ({"guidance_scale_2": 2.0}, "no second expert")):
                args = dict(width=WIDTH, height=HEIGHT, num_frames=FRAMES, steps=2, seed=5)
                args.update(kwargs)
                with self.assertRaises(dc.InvalidArgumentError) as caught:
                    client.generate_video("wanpipe", "a lighthouse", video_format="png_frames", **args)
                self.assertIn(says, str(caught.exception))
            # Decode: latents the VAE could never decode, from its description.
            for shape, says in (((16, 2, 6, 8), "a video's latents [C, F, h, w] are decoded by Generate"),
                                ((4, 6, 8), "decodes one image from [16, h, w] or [16, 1, h, w]")):
                latents = dc.WireTensor.from_floats([0.0] * math.prod(shape), shape)
                with self.assertRaises(dc.InvalidArgumentError) as caught:
                    client.decode("wanpipe/vae", latents)
                self.assertIn(says, str(caught.exception))
            self.assertEqual({m.model_id for m in client.list_models()}, before)


if __name__ == "__main__":
    unittest.main()
