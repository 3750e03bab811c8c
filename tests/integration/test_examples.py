"""The Python client's examples (clients/python/examples) against a real
daemon, run as a user would run them: generate_png.py on the random Z-Image
pipeline of test_generate.py, denoise_only.py on the demo transformer.
"""

import os
import subprocess
import sys
import unittest

from daemon_fixture import DEMO_MODEL, PIPELINE, REPO_ROOT, Daemon, pipeline_models_dir, work_dir
from test_generate import png_size

import diffusiond_client as dc

EXAMPLES = REPO_ROOT / "clients" / "python" / "examples"


def run_example(name, *args):
    """Runs an example with this interpreter and environment (PYTHONPATH
    included); returns its stdout, failing with its output if it fails."""
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=240, env=os.environ)
    if r.returncode != 0:
        raise AssertionError(f"{name} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(pipeline_models_dir(), ram_budget="2GiB").start()
        cls.addClassCleanup(cls.daemon.kill)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.assert_stops_cleanly()

    def test_generate_png_loads_generates_and_unloads(self):
        out = work_dir() / "example.png"
        stdout = run_example("generate_png.py", "--address", self.daemon.address, "--pipeline", PIPELINE,
                             "--prompt", "a lighthouse", "--width", "64", "--height", "48", "--steps", "2",
                             "--seed", "3", "--out", str(out))
        self.assertEqual(png_size(out.read_bytes()), (64, 48))
        self.assertIn(f"load {PIPELINE}/transformer:", stdout)
        self.assertEqual(stdout.count("\ndenoise "), 2)
        self.assertIn(f"unloaded {PIPELINE}/vae", stdout)
        with dc.Client(self.daemon.address, timeout=30) as c:
            left = [m.model_id for m in c.list_models() if m.model_id.startswith(f"{PIPELINE}/")]
            self.assertEqual(left, [], "the example unloads what it loaded")

    def test_denoise_only_writes_the_latents(self):
        out = work_dir() / "example-latents.f32"
        stdout = run_example("denoise_only.py", "--address", self.daemon.address, "--model", DEMO_MODEL,
                             "--latent-shape", "16,8,8", "--steps", "3", "--out", str(out))
        self.assertIn("step 3/3", stdout)
        self.assertEqual(out.stat().st_size, 16 * 8 * 8 * 4)


if __name__ == "__main__":
    unittest.main()
