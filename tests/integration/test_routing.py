"""Model-affinity routing: three daemons behind nginx (deploy/nginx/diffusiond.conf), ctest integration.Routing.

The Python client names each call's model in the diffusiond-model header and nginx hashes it onto a ring
of the replicas (ketama), so each model is loaded on one replica only. The test predicts that replica
with nginx's own ring arithmetic (render.ring_owner, which `render.py --place` prints) and checks where
the models really are, by asking each daemon directly: four models and a Generate on the random Z-Image pipeline,
whose three components must all load on the one replica its pipeline name hashes to.

Skipped when nginx is not installed (Debian: apt-get install nginx); it runs unprivileged, from a
temporary prefix.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import diffusiond_client as dc
from daemon_fixture import (PIPELINE, REPO_ROOT, Daemon, binary, caption, daemon_env, metric, parse_metrics,
                            pipeline_models_dir, stop_process, work_dir)

sys.path.insert(0, str(REPO_ROOT / "deploy" / "nginx"))
import render  # noqa: E402  deploy/nginx/render.py
from render import ring, ring_owner  # noqa: E402  nginx's ring arithmetic

MODEL_PATH = "demo"
REPLICAS = 3


def nginx_binary():
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loads(daemon):
    """Returns the daemon's successful loads (diffusiond_model_loads_total{result="ok"})."""
    return metric(parse_metrics(daemon.scrape()), "diffusiond_model_loads_total", result="ok") or 0


def step_inputs():
    return {"x": dc.WireTensor.from_floats([0.5] * (16 * 8 * 8), (1, 16, 1, 8, 8)),
            "t": dc.WireTensor.from_floats([0.5], (1,)), "cap_feats_0": caption()}


class RoutingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nginx = nginx_binary()
        if nginx is None:
            raise unittest.SkipTest("nginx is not installed (Debian: apt-get install nginx): routing not tested")
        models = pipeline_models_dir()  # the demo model and the random Z-Image pipeline
        cls.daemons = [Daemon(models) for _ in range(REPLICAS)]
        for daemon in cls.daemons:
            cls.addClassCleanup(daemon.kill)
        with ThreadPoolExecutor(REPLICAS) as pool:  # each start waits for its ready line: in parallel
            list(pool.map(Daemon.start, cls.daemons))
        cls.by_address = {d.address: d for d in cls.daemons}
        prefix = Path(work_dir()) / "nginx"
        prefix.mkdir()
        cls.proxy_address = f"127.0.0.1:{free_port()}"
        # fail_timeout: a stopped replica stays out of the ring for the rest of the test.
        (prefix / "nginx.conf").write_text(render.render(cls.proxy_address, list(cls.by_address), "60s"))
        cls.nginx = subprocess.Popen([nginx, "-p", str(prefix), "-c", "nginx.conf", "-g", "daemon off;"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
        cls.addClassCleanup(cls._stop_nginx)
        cls.client = dc.Client(cls.proxy_address, timeout=60)
        cls.addClassCleanup(cls.client.close)
        deadline = time.monotonic() + 20
        while True:
            try:
                cls.client.health(timeout=2)
                break
            except dc.DiffusiondError:
                if cls.nginx.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"nginx did not serve {cls.proxy_address}:\n{cls._nginx_output()}")
                time.sleep(0.1)
        # Four ids that the ring spreads over all three replicas, found with nginx's arithmetic; the test
        # then checks that nginx agrees.
        cls.points = ring(list(cls.by_address))
        cls.ids, owners = [], set()
        for i in range(1000):
            model_id = f"model-{i}"
            owner = ring_owner(cls.points, model_id)
            if len(cls.ids) < REPLICAS and owner in owners:
                continue  # one for each replica first, then a second on one of them
            cls.ids.append(model_id)
            owners.add(owner)
            if len(cls.ids) == 4:
                break
        assert len(owners) == REPLICAS, f"no ids covering every replica: {cls.ids}"

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls._stop_nginx()
        with ThreadPoolExecutor(REPLICAS) as pool:
            list(pool.map(Daemon.assert_stops_cleanly, cls.daemons))

    @classmethod
    def _stop_nginx(cls):
        stop_process(cls.nginx)

    @classmethod
    def _nginx_output(cls):
        if cls.nginx.poll() is None:
            cls.nginx.kill()
        return cls.nginx.communicate()[0]

    def placement(self):
        """Returns {model id: [addresses of the live replicas that hold it]}, asking each daemon."""
        held = {}
        for daemon in self.daemons:
            if daemon.proc.poll() is not None:
                continue
            with daemon.client(timeout=10) as c:
                for m in c.list_models():
                    held.setdefault(m.model_id, []).append(daemon.address)
        return held

    def unload_everywhere(self, model_ids):
        """Unloads the models on whichever live replicas hold them, asking each directly."""
        for model_id, addresses in self.placement().items():
            if model_id in model_ids:
                for address in addresses:
                    with self.by_address[address].client(timeout=30) as c:
                        c.unload_model(model_id)

    def test_a_pipelines_components_stay_on_one_replica(self):
        # Generate names the pipeline in the header; the replica it lands on loads the text encoder, transformer
        # and VAE itself, so all three are there and nowhere else. (Named to run before the test that stops a
        # replica; the ring is that of the live replicas either way.)
        live = [d for d in self.daemons if d.proc.poll() is None]
        owner = ring_owner(ring([d.address for d in live]), PIPELINE)
        before = {d.address: loads(d) for d in live}
        components = [f"{PIPELINE}/{c}" for c in ("text_encoder", "transformer", "vae")]
        self.addCleanup(self.unload_everywhere, components)  # the other tests expect only their own models
        image = self.client.generate(PIPELINE, "a red lighthouse", width=64, height=48, steps=1, seed=3)
        self.assertEqual((image.width, image.height), (64, 48))
        held = self.placement()
        self.assertEqual({c: held.get(c) for c in components}, {c: [owner] for c in components},
                         f"every component on {owner}, the replica the ring names for {PIPELINE}")
        self.assertEqual({d.address: loads(d) - before[d.address] for d in live},
                         {d.address: len(components) if d.address == owner else 0 for d in live},
                         "the owner loaded the three components, no other replica loaded anything")

    def test_models_stay_on_their_replica_and_only_a_stopped_ones_move(self):
        baseline = sum(loads(d) for d in self.daemons)  # other tests' loads
        for model_id in self.ids:
            self.client.load_model(MODEL_PATH, model_id=model_id)
            self.assertEqual(list(self.client.step(model_id, step_inputs())), ["out"])
        expected = {m: [ring_owner(self.points, m)] for m in self.ids}
        self.assertEqual(self.placement(), expected, "each model on exactly the replica its hash names")

        # Repeat calls hit the owner's cache: no replica loads anything again.
        before = [loads(d) for d in self.daemons]
        self.assertEqual(sum(before) - baseline, len(self.ids))
        for _ in range(2):
            for model_id in self.ids:
                self.client.load_model(MODEL_PATH, model_id=model_id)
                self.client.step(model_id, step_inputs())
        self.assertEqual([loads(d) for d in self.daemons], before)
        self.assertEqual(self.placement(), expected)

        # Stop the replica of the first model. Its models answer NOT_FOUND on the replica the ring now
        # names (not loaded there yet) and load there; every other model stays where it was.
        gone = expected[self.ids[0]][0]
        self.assertEqual(self.by_address[gone].stop(), 0)
        survivors = [a for a in self.by_address if a != gone]
        points = ring(survivors)
        moved = [m for m in self.ids if expected[m] == [gone]]
        for model_id in moved:
            with self.assertRaises(dc.NotFoundError):
                self.client.step(model_id, step_inputs())
            self.client.load_model(MODEL_PATH, model_id=model_id)
            self.client.step(model_id, step_inputs())
        for model_id in self.ids:
            self.client.step(model_id, step_inputs())
        after = {m: ([ring_owner(points, m)] if m in moved else expected[m]) for m in self.ids}
        self.assertEqual(self.placement(), after, f"only the models of {gone} moved")
        for daemon in self.daemons:
            if daemon.address != gone:
                want = before[self.daemons.index(daemon)] + sum(after[m] == [daemon.address] for m in moved)
                self.assertEqual(loads(daemon), want, f"{daemon.address} loaded only the moved models")

    def test_diffusionctl_routes_by_the_header_too(self):
        ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl", required=False)
        if ctl is None:
            self.skipTest("diffusionctl not built")
        # An id of its own lands on the replica the ring names; a lease's renew and release reach it with --model.
        model_id, owner = next((f"ctl-{i}", ring_owner(self.points, f"ctl-{i}")) for i in range(1000))

        def run(*args):
            out = subprocess.run([ctl, "--address", self.proxy_address, *args], capture_output=True, text=True,
                                 timeout=60, env=daemon_env())
            self.assertEqual(out.returncode, 0, f"diffusionctl {' '.join(args)}:\n{out.stdout}\n{out.stderr}")
            return out.stdout

        run("load", MODEL_PATH, "--id", model_id)
        lease = run("lease", model_id).strip()
        run("renew", lease, "--model", model_id)
        run("release", lease, "--model", model_id)
        self.assertEqual(self.placement().get(model_id), [owner])
        run("unload", model_id)
        self.assertNotIn(model_id, self.placement())

    def test_model_less_calls_reach_a_replica(self):
        for _ in range(6):
            self.assertEqual(self.client.health(), "SERVING")
            self.client.stats()


if __name__ == "__main__":
    unittest.main()
