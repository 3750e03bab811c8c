"""Shared fixtures of the integration tests: the demo model and a real daemon.

The binaries come from the environment, as ctest sets it
(tests/integration/CMakeLists.txt):

  DIFFUSIOND_BIN        the daemon (required)
  DIFFUSIOND_DEMO_BIN   diffusiond-demo, which generates the demo model (required)
  DIFFUSIONCTL_BIN      the CLI (its tests skip without it)

Unset, each falls back to build/release/{server,clients,tools}/<name> in this checkout; a test
that needs a binary found neither way is skipped, and one named by a variable
but missing fails. The client's stubs must be importable:
PYTHONPATH=<build>/python:clients/python.

The demo model is generated once per process into a temporary models
directory (``<tmp>/models/demo``), which every daemon of the process serves;
so are the random pipelines (``<tmp>/models/zpipe`` and the others
demo_pipeline writes) for the tests that ask for them.
"""

import atexit
import json
import math
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

import diffusiond_client as dc

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_MODEL = "demo"  # the demo model's folder inside the models directory
READY_TIMEOUT_S = 60
CAPTION_DIM = 128  # the demo model's cap_feat_dim
LATENT_SHAPE = (16, 32, 32)  # small, so a step takes milliseconds

# The daemon under test is a sanitizer build (DIFFUSIOND_SANITIZER, set by
# CMake). Its allocator quarantines freed memory and its shadow grows with the
# heap, so RSS bounds say nothing there; accounting is still checked.
SANITIZED = bool(os.environ.get("DIFFUSIOND_SANITIZER"))

_READY = re.compile(r"msg=ready\b.*?(?:^|\s)listen=(\S+).*?\smetrics_listen=(\S+)")


def binary(variable, name, required=True):
    """Returns the path of a binary from $variable or build/release/{server,clients,tools}/name.

    Skips the test when neither is set/built (or returns None if not
    ``required``); fails when $variable names a file that does not exist.
    """
    path = os.environ.get(variable)
    if path:
        if not os.access(path, os.X_OK):
            raise AssertionError(f"${variable}={path} is not an executable file")
        return path
    for folder in ("server", "clients", "tools"):
        fallback = REPO_ROOT / "build" / "release" / folder / name
        if fallback.is_file() and os.access(fallback, os.X_OK):
            return str(fallback)
    if not required:
        return None
    raise unittest.SkipTest(f"{name} not found: set ${variable} or build it in build/release")


_work_dir = None
_work_lock = threading.Lock()


def work_dir():
    """Returns this process's temporary folder, removed at exit."""
    global _work_dir
    with _work_lock:
        if _work_dir is None:
            _work_dir = Path(tempfile.mkdtemp(prefix="diffusiond-it-"))
            atexit.register(shutil.rmtree, _work_dir, True)
        return _work_dir


def models_dir():
    """Returns a models directory holding the demo model (generated on first use)."""
    models = work_dir() / "models"
    demo = models / DEMO_MODEL
    if not (demo / "config.json").exists():
        demo_bin = binary("DIFFUSIOND_DEMO_BIN", "diffusiond-demo")
        models.mkdir(exist_ok=True)
        out = subprocess.run([demo_bin, "--model_dir", str(demo), "--generate_only"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0 or not (demo / "config.json").exists():
            raise AssertionError(f"{demo_bin} --model_dir {demo} --generate_only exited {out.returncode} "
                                 f"without a model:\n{out.stdout}\n{out.stderr}")
    return models


PIPELINE = "zpipe"  # the random Z-Image pipeline's folder inside the models directory
COMPONENTS = [f"{PIPELINE}/{c}" for c in ("text_encoder", "transformer", "vae")]
_pipeline_lock = threading.Lock()


def demo_pipeline(name, kind="z-image"):
    """Returns ``name``, a random pipeline folder of ``kind`` (z-image, flux, qwen-image, krea2: real layouts,
    random weights; ``diffusiond-demo --write_pipeline DIR --pipeline kind``) inside models_dir(), written on
    first use."""
    models = models_dir()
    with _pipeline_lock:
        if not (models / name / "model_index.json").exists():
            out = subprocess.run([binary("DIFFUSIOND_DEMO_BIN", "diffusiond-demo"), "--write_pipeline",
                                  str(models / name), "--pipeline", kind], stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                raise AssertionError(f"--write_pipeline exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return name


def pipeline_models_dir():
    """Returns the models directory with the random Z-Image pipeline (text encoder and tokenizer, transformer,
    VAE: real layouts, random weights; ``diffusiond-demo --write_pipeline``) written on first use."""
    demo_pipeline(PIPELINE)
    return models_dir()


def fixture_folder(variable, name):
    """Returns a reference fixture's folder, as tests/testing/fixtures.h finds it.

    $variable (e.g. DIFFUSIOND_WAN22_FIXTURE), else $DIFFUSIOND_FIXTURES/name, else shared/fixtures/name beside
    this checkout. Fails when it is absent: the fixtures are part of the suite.
    """
    folder = os.environ.get(variable)
    if not folder:
        folder = Path(os.environ.get("DIFFUSIOND_FIXTURES") or REPO_ROOT.parent / "shared" / "fixtures") / name
    folder = Path(folder)
    if not folder.is_dir():
        raise AssertionError(f"fixture {name} not found at {folder}: set ${variable} or $DIFFUSIOND_FIXTURES")
    return folder


def fixture_model(fixture, config, weights, name):
    """Returns ``name``, a diffusers folder inside models_dir() copied from one model of a fixture.

    A fixture keeps its configs beside several weight folders: ``config`` (e.g. "config_2.json") becomes the
    folder's config.json, ``weights`` (e.g. "transformer_2") its diffusion_pytorch_model.safetensors, and the
    fixture's scheduler_config.json comes along. Copied, not linked: the daemon serves nothing from outside
    its models directory.
    """
    folder = models_dir() / name
    if not (folder / "config.json").exists():
        staging = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=models_dir()))
        shutil.copyfile(fixture / weights / "diffusion_pytorch_model.safetensors",
                        staging / "diffusion_pytorch_model.safetensors")
        shutil.copyfile(fixture / "scheduler_config.json", staging / "scheduler_config.json")
        shutil.copyfile(fixture / config, staging / "config.json")
        try:
            staging.rename(folder)
        except OSError:  # another test of the process made it first
            shutil.rmtree(staging, True)
    return name


def stretched_model(source, name, blocks, count_field, n_blocks):
    """Returns ``name``, a folder inside models_dir() holding the diffusers folder ``source`` stretched to
    ``n_blocks`` blocks (written on first use): its ``<blocks>.0.*`` tensors repeated under
    ``<blocks>.<i>.``, the other tensors kept, the config's ``count_field`` set to ``n_blocks``. Every
    weight is zero, the data being a hole in a sparse file, so it takes no disk."""
    folder = models_dir() / name
    if (folder / "config.json").exists():
        return name
    weights = "diffusion_pytorch_model.safetensors"
    with open(source / weights, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    header.pop("__metadata__", None)
    first = f"{blocks}.0."
    block = {k[len(first):]: v for k, v in header.items() if k.startswith(first)}
    specs = [(k, v) for k, v in header.items() if not k.startswith(blocks + ".")]
    specs += [(f"{blocks}.{i}.{k}", v) for i in range(n_blocks) for k, v in block.items()]
    out, offset = {}, 0
    for key, v in specs:
        size = v["data_offsets"][1] - v["data_offsets"][0]
        out[key] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(out, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    partial = Path(tempfile.mkdtemp(dir=models_dir()))
    with open(partial / weights, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + offset)  # the tensors: a hole, read as zeros
    config = json.loads((source / "config.json").read_text())
    config[count_field] = n_blocks
    (partial / "config.json").write_text(json.dumps(config))
    try:
        partial.rename(folder)
    except OSError:  # another test of the process made it first
        shutil.rmtree(partial, True)
    return name


def slow_model(n_layers):
    """Returns the folder name, inside models_dir(), of the demo model stretched to ``n_layers`` main
    layers (generated on first use), for tests that act while a load runs: each layer is 15 tensors,
    2.1 MB of bfloat16 and 1.1 MB of FP8 once loaded, so the load takes seconds instead of a tenth of
    one (150 layers: 0.4 to 1.4 s on 2 cores, busy or not). Every weight is zero (stretched_model), so
    only loads are meaningful on it."""
    return stretched_model(models_dir() / DEMO_MODEL, f"slow-{n_layers}", "layers", "n_layers", n_layers)


def daemon_env():
    """The environment for child binaries: ours without DIFFUSIOND_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("DIFFUSIOND_")}


def stop_process(proc, timeout_s=10):
    """Ends a helper process the tests started (nginx, prometheus): SIGTERM,
    then SIGKILL if it has not exited within ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Daemon:
    """One diffusiond process on 127.0.0.1 with ephemeral ports.

    start() returns once the ready line was logged; stop() sends SIGTERM and
    returns the exit status. stderr is collected for failure messages.
    """

    def __init__(self, models, ram_budget="512MiB", drain_grace="10s", extra_args=()):
        # float32 unless the test asks otherwise: the daemon's default is the
        # CPU's fast path (bfloat16 where it has native bf16 matmuls), and a
        # test's numbers must not depend on which CPU runs it.
        dtype = [] if any(a.startswith("--compute_dtype") for a in extra_args) else ["--compute_dtype", "float32"]
        self.args = [binary("DIFFUSIOND_BIN", "diffusiond"), "--listen", "127.0.0.1:0", "--metrics_listen",
                     "127.0.0.1:0", "--models_dir", str(models), "--ram_budget", ram_budget, "--drain_grace",
                     drain_grace, "--log_level", "debug", *dtype, *extra_args]
        self.proc = None
        self.address = self.metrics_address = None
        self._lines = []
        self._cond = threading.Condition()
        self._readers = []
        self._terminated = False

    def start(self):
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, errors="replace", env=daemon_env())
        for stream in (self.proc.stderr, self.proc.stdout):
            t = threading.Thread(target=self._read, args=(stream,), daemon=True)
            t.start()
            self._readers.append(t)
        match = self.wait_for_line(_READY, READY_TIMEOUT_S)
        if match is None:
            code = self.proc.poll()
            self.kill()
            state = f"exited with {code}" if code is not None else f"not ready after {READY_TIMEOUT_S} s"
            raise AssertionError(f"diffusiond {state}: {' '.join(self.args)}\n--- stderr ---\n{self.output()}")
        self.address, self.metrics_address = match.group(1), match.group(2)
        return self

    def _read(self, stream):
        for line in stream:
            with self._cond:
                self._lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for_line(self, pattern, timeout_s):
        """Returns the first match of ``pattern`` in the output, or None at the
        timeout or once the process has exited without it."""
        pattern = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        seen = 0
        with self._cond:
            while True:
                for line in self._lines[seen:]:
                    m = pattern.search(line)
                    if m:
                        return m
                seen = len(self._lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not any(t.is_alive() for t in self._readers)):
                    return None
                self._cond.wait(min(left, 0.2))

    def output(self):
        """Returns everything the daemon wrote so far."""
        with self._cond:
            return "\n".join(self._lines)

    def rss_bytes(self, field="VmRSS"):
        """Returns the daemon's resident set size (``field`` of /proc/<pid>/status: VmRSS, or VmHWM for its
        peak so far) in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} in /proc/{self.proc.pid}/status")

    def client(self, timeout=120):
        return dc.Client(self.address, timeout=timeout)

    def scrape(self):
        """Returns the text of GET /metrics."""
        with urllib.request.urlopen(f"http://{self.metrics_address}/metrics", timeout=10) as r:
            return r.read().decode()

    def terminate(self):
        """Sends SIGTERM (once: Kubernetes sends one, then SIGKILL)."""
        if not self._terminated:
            self._terminated = True
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout_s=60):
        """Sends SIGTERM and returns the exit status; kills it after ``timeout_s``
        and raises AssertionError with its output."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.terminate()  # unless the test already did
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"diffusiond did not exit within {timeout_s} s of SIGTERM\n{self.output()}")
        self._close()
        return code

    def kill(self):
        """Kills the process if it still runs (cleanup after a failure)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self):
        for t in self._readers:
            t.join(5)
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None and not stream.closed and not any(t.is_alive() for t in self._readers):
                    stream.close()

    def assert_stops_cleanly(self, timeout_s=60):
        code = self.stop(timeout_s)
        if code != 0:
            raise AssertionError(f"diffusiond exited with {code} after SIGTERM, expected 0\n{self.output()}")


class DaemonTestCase(unittest.TestCase):
    """A test class sharing one daemon; the class attribute ``daemon_options``
    (keyword arguments of Daemon) configures it. tearDownClass asserts that
    SIGTERM stops it with exit status 0."""

    daemon_options = {}

    @classmethod
    def setUpClass(cls):
        cls.models_dir = models_dir()
        cls.daemon = Daemon(cls.models_dir, **cls.daemon_options).start()
        cls.addClassCleanup(cls.daemon.kill)
        cls.client = cls.daemon.client()
        cls.addClassCleanup(cls.client.close)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.assert_stops_cleanly()

    def fail_with_log(self, message):
        self.fail(f"{message}\n--- daemon output ---\n{self.daemon.output()}")


def assert_finite_latents(test, latents, shape=LATENT_SHAPE):
    """Fails `test` unless `latents` is a float32 tensor of `shape`, all finite and not all zero."""
    test.assertEqual(latents.dtype, "float32")
    test.assertEqual(latents.shape, tuple(shape))
    values = latents.to_array()
    bad = sum(1 for v in values if not math.isfinite(v))
    test.assertEqual(bad, 0, f"{bad} of {len(values)} latents are not finite")
    test.assertGreater(max(abs(v) for v in values), 0.0, "the latents are all zero")


def caption(length=8, dim=CAPTION_DIM, seed=1):
    """Returns deterministic caption features [length, dim] (float32 WireTensor)."""
    rng = random.Random(seed)
    return dc.WireTensor.from_floats([rng.gauss(0, 1) for _ in range(length * dim)], (length, dim))


def conditioning(length=8, dim=CAPTION_DIM, seed=1):
    """Returns the demo model's conditioning: {"cap_feats": caption(...)}."""
    return {"cap_feats": caption(length, dim, seed)}


def parse_metrics(text):
    """Returns the samples of a Prometheus text exposition as (name, labels, value)."""
    samples = []
    label = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
    line_re = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        if m:
            samples.append((m.group(1), dict(label.findall(m.group(2) or "")), float(m.group(3))))
    return samples


def metric(samples, name, **labels):
    """Returns the value of the first sample ``name`` whose labels include ``labels``, or None."""
    for n, l, v in samples:
        if n == name and all(l.get(k) == want for k, want in labels.items()):
            return v
    return None
