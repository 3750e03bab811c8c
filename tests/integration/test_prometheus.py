"""A real Prometheus server (Debian's prometheus) scraping a live daemon with deploy/prometheus/rules.yml loaded
(ctest: integration.Prometheus).

It waits for a scrape, reads process_resident_memory_bytes and the budget gauges of the target through the HTTP
API, checks that every rule evaluates without error against the real series, and makes one alert true (a load
refused for room: DiffusiondLoadRejections, which has no `for`) and sees it fire. Skipped without the
prometheus binary. Nothing here waits for a fixed time: every wait polls until a generous deadline.
"""

import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import diffusiond_client as dc
from daemon_fixture import DEMO_MODEL, REPO_ROOT, Daemon, models_dir, stop_process

RULES = REPO_ROOT / "deploy" / "prometheus" / "rules.yml"
BUDGET_BYTES = 1 << 20  # far below the demo model, so its load is refused
DEADLINE_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """One prometheus process on 127.0.0.1, scraping `target` every second with `rule_files`."""

    def __init__(self, binary, target, rule_files):
        self.dir = Path(tempfile.mkdtemp(prefix="diffusiond-prometheus-"))
        config = self.dir / "prometheus.yml"
        # JSON is YAML: no YAML library needed to write it.
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(f) for f in rule_files],
            "scrape_configs": [{"job_name": "diffusiond", "static_configs": [{"targets": [target]}]}],
        }))
        self.port = free_port()
        self.log = open(self.dir / "prometheus.log", "w+")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def api(self, path, **params):
        """Returns the `data` of GET /api/v1/<path>; None while the server is not up yet."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            if e.code == 503:  # still starting
                return None
            raise AssertionError(f"prometheus: GET {url}: {e.code} {e.read().decode(errors='replace')}")
        except (ConnectionError, urllib.error.URLError):
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited {self.proc.returncode}:\n{self.output()}")
            return None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        """Returns {frozenset(labels): value} of an instant query; {} while there is none."""
        data = self.api("query", query=expr)
        if data is None:
            return {}
        return {frozenset(r["metric"].items()): float(r["value"][1]) for r in data["result"]}

    def wait_for(self, what, probe):
        """Returns probe()'s first truthy value, polling until DEADLINE_S."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"prometheus: no {what} within {DEADLINE_S} s\n{self.output()}")
            time.sleep(0.2)

    def close(self):
        stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrometheusTest(unittest.TestCase):
    def setUp(self):
        binary = shutil.which("prometheus")
        if binary is None:
            self.skipTest("prometheus not found; install Debian's prometheus package (deploy/install-deps.sh)")
        self.daemon = Daemon(models_dir(), ram_budget="1MiB").start()
        self.addCleanup(self.daemon.kill)
        self.prometheus = Prometheus(binary, self.daemon.metrics_address, [RULES])
        self.addCleanup(self.prometheus.close)

    def test_scrapes_the_daemon_and_fires_an_alert(self):
        p = self.prometheus
        target = {"job": "diffusiond", "instance": self.daemon.metrics_address}
        selector = ", ".join(f'{k}="{v}"' for k, v in target.items())
        p.wait_for("successful scrape", lambda: p.query(f"up{{{selector}}} == 1"))

        # Each read polls: a sample may land a moment after `up` does.
        rss = p.wait_for("RSS", lambda: p.query(f"process_resident_memory_bytes{{{selector}}}"))
        self.assertEqual(len(rss), 1, rss)
        self.assertGreater(next(iter(rss.values())), 10 << 20)  # libtorch alone is more
        budget = p.wait_for("budget", lambda: p.query(f"diffusiond_memory_budget_bytes{{{selector}}}"))
        self.assertEqual(budget, {frozenset({**target, "__name__": "diffusiond_memory_budget_bytes",
                                             "device": "cpu"}.items()): BUDGET_BYTES})
        limit = p.wait_for("limit", lambda: p.query(f"diffusiond_memory_limit_bytes{{{selector}}}"))
        self.assertEqual(len(limit), 1, limit)
        self.assertGreater(next(iter(limit.values())), BUDGET_BYTES)
        for gauge in ("diffusiond_memory_used_bytes", "diffusiond_memory_reserved_bytes"):
            self.assertEqual(len(p.wait_for(gauge, lambda: p.query(f"{gauge}{{{selector}}}"))), 1, gauge)
        self.assertEqual(p.wait_for("ready", lambda: p.query(f"diffusiond_ready{{{selector}}}")),
                         {frozenset({**target, "__name__": "diffusiond_ready"}.items()): 1})

        # A scrape with no refused load yet, so that increase() sees the one that follows.
        rejected = f'diffusiond_model_loads_total{{{selector}, result="rejected"}}'
        p.wait_for("two scrapes of the rejections counter", lambda: p.query(f"count_over_time({rejected}[1m]) >= 2"))
        with self.daemon.client() as client, self.assertRaises(dc.ResourceExhaustedError):
            client.load_model(DEMO_MODEL)
        alert = p.wait_for("firing DiffusiondLoadRejections", lambda: [
            a for a in (p.api("alerts") or {"alerts": []})["alerts"]
            if a["labels"].get("alertname") == "DiffusiondLoadRejections" and a["state"] == "firing"])
        self.assertEqual(alert[0]["labels"]["instance"], self.daemon.metrics_address)

        # Every rule, recording or alerting, evaluates without error on the real series (polled: a rule
        # added to the file may not have been evaluated yet).
        def rules_ok():
            rules = [r for g in p.api("rules")["groups"] for r in g["rules"]]
            return rules if all(r["health"] == "ok" for r in rules) else None

        try:
            rules = p.wait_for("evaluation of every rule without error", rules_ok)
        except AssertionError:
            self.fail(json.dumps(p.api("rules"), indent=1))
        self.assertEqual(len(rules), len(re.findall(r"^\s*- (?:record|alert):", RULES.read_text(), re.M)))
        self.daemon.assert_stops_cleanly()


if __name__ == "__main__":
    unittest.main()
