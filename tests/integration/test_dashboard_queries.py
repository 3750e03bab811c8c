"""Every query of deploy/grafana/diffusiond.json and deploy/prometheus/rules.yml parses, and names only
series the daemon exports.

Parsing is promtool's (`promtool check rules` over a rules file made of the dashboard's queries, Grafana's
variables substituted); without promtool that test is skipped. The names are checked against a scrape of a
live daemon that has loaded, stepped, evicted and refused: a family of the scrape (a histogram's _bucket, _sum
and _count included), a rule recorded in rules.yml, or `up`, which Prometheus itself writes per target.
"""

import json
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import diffusiond_client as dc
from daemon_fixture import (DEMO_MODEL, LATENT_SHAPE, REPO_ROOT, Daemon, conditioning, metric, models_dir,
                            parse_metrics, slow_model)

DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "diffusiond.json"
RULES = REPO_ROOT / "deploy" / "prometheus" / "rules.yml"

# Grafana's variables, as a query of the dashboard may use them.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "${DS_PROMETHEUS}": "prometheus",
                     "$instance": ".*", "$job": "diffusiond"}
# Series Prometheus writes itself for every target.
PROMETHEUS_SERIES = {"up"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset",
                "bool", "inf", "nan", "start", "end"}


def dashboard_queries(dashboard):
    """Returns (where, PromQL) for every target of every panel, and the metric selector of each
    label_values() variable; Grafana's variables substituted."""
    out = []

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dashboard["panels"]):
        for t in p.get("targets", []):
            out.append((f"panel {p['title']!r} target {t['refId']}", t["expr"]))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*\w+\)", query.strip())
        assert m, f"variable {v['name']}: not label_values(selector, label): {query}"
        out.append((f"variable ${v['name']}", m.group(1)))
    substituted = []
    for where, expr in out:
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, f"{where}: a Grafana variable this test does not know: {expr}"
        substituted.append((where, expr))
    return substituted


def rules(text):
    """Returns (kind, name, expr) for each rule of a rules file written as deploy/prometheus/rules.yml is: one
    key per line, `expr` on one line or as a `|` block. (The integration tests have no YAML library.)"""
    out = []
    lines = text.splitlines()
    i = 0
    name = None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*(?:-\s+)?(record|alert):\s*(\S+)\s*$", line)
        if m:
            name = (m.group(1), m.group(2))
        m = re.match(r"^(\s*)expr:\s*(.*?)\s*$", line)
        if m:
            assert name is not None, f"line {i + 1}: expr before record/alert"
            value = m.group(2)
            if value in ("|", "|-", ">", ">-"):
                indent = len(m.group(1))
                block = []
                while i + 1 < len(lines) and (not lines[i + 1].strip() or
                                              len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                    i += 1
                    block.append(lines[i].strip())
                value = " ".join(b for b in block if b)
            elif value[:1] in ("'", '"'):
                value = json.loads(value) if value[0] == '"' else value[1:-1].replace("''", "'")
            out.append((name[0], name[1], value))
            name = None
        i += 1
    return out


def series_names(expr):
    """Returns the metric names a PromQL expression selects: what is left once strings, label matchers,
    ranges, label lists, numbers, keywords and function names are taken out."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+-?\w+", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(\s*\()?", e):
        if m.group(2) or m.group(1).lower() in PROMQL_WORDS:
            continue  # a function or an aggregation, or a keyword
        names.add(m.group(1))
    return names


class ParsingTest(unittest.TestCase):
    """The readers above, on known inputs (so a silent misparse cannot pass the checks below)."""

    def test_series_names(self):
        self.assertEqual(
            series_names('histogram_quantile(0.9, sum by (model, le) (rate(a_bucket{job="x", b=~"y"}[5m])))'),
            {"a_bucket"})
        self.assertEqual(series_names("x:y:z > 1.5 * (x:y:z offset 1d) or on(job) up == 0"), {"x:y:z", "up"})
        self.assertEqual(series_names("a - ignoring(device) b{device=\"cpu\"} > 2 * 1024 ^ 3 and 1e9"), {"a", "b"})

    def test_rules_reads_every_rule_of_the_file(self):
        text = RULES.read_text()
        found = rules(text)
        self.assertEqual(len(found), len(re.findall(r"^\s*-\s+(?:record|alert):", text, re.M)))
        self.assertTrue(all(expr for _, _, expr in found), found)


class DashboardQueriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dashboard = json.loads(DASHBOARD.read_text())
        cls.queries = dashboard_queries(cls.dashboard)
        cls.rules = rules(RULES.read_text())

    def test_dashboard_states_its_schema_and_variables(self):
        self.assertEqual(self.dashboard["schemaVersion"], 39)
        names = {v["name"] for v in self.dashboard["templating"]["list"]}
        self.assertLessEqual({"DS_PROMETHEUS", "job", "instance"}, names)
        for where, expr in self.queries:
            if where.startswith("panel"):
                self.assertIn('job="diffusiond"', expr, f"{where}: not filtered by $job")

    def test_every_query_parses(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool not found; install Debian's prometheus package (deploy/install-deps.sh)")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "dashboard_rules.yml"
            lines = ["groups:", "  - name: dashboard", "    rules:"]
            for i, (where, expr) in enumerate(self.queries):
                lines += [f"      - record: dashboard:query_{i}", f"        expr: {json.dumps(expr)}"]
            path.write_text("\n".join(lines) + "\n")
            out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True,
                                 timeout=60)
        index = "\n".join(f"dashboard:query_{i}: {where}: {expr}" for i, (where, expr) in enumerate(self.queries))
        self.assertEqual(out.returncode, 0, f"{out.stdout}\n{out.stderr}\n{index}")

    def test_every_query_names_only_exported_series(self):
        exported = scrape_of_a_busy_daemon(self)
        recorded = {name for kind, name, _ in self.rules if kind == "record"}
        known = exported | recorded | PROMETHEUS_SERIES
        queries = self.queries + [(f"rules.yml {kind} {name}", expr) for kind, name, expr in self.rules]
        unknown = []
        for where, expr in queries:
            names = series_names(expr)
            self.assertTrue(names, f"{where}: no series found in {expr}")
            unknown += [f"{where}: {n}" for n in sorted(names - known)]
        self.assertEqual(unknown, [], "series the daemon does not export")


def scrape_of_a_busy_daemon(test):
    """Returns the series names of /metrics of a daemon that loaded, stepped, evicted and refused:
    each family, and for a histogram its _bucket, _sum and _count series."""
    daemon = Daemon(models_dir(), ram_budget="256MiB").start()
    test.addCleanup(daemon.kill)
    with daemon.client() as client:
        client.load_model(DEMO_MODEL)
        client.make_room(256 << 20)  # evicts the demo model
        client.load_model(DEMO_MODEL)  # and loads it again, for the per-model series
        client.denoise(DEMO_MODEL, conditioning(), shape=LATENT_SHAPE, steps=2)
        with test.assertRaises(dc.ResourceExhaustedError):
            client.load_model(slow_model(300))  # 330 MB of weights: more than the budget
        with test.assertRaises(dc.NotFoundError):
            client.step("never-loaded", {"x": dc.WireTensor.zeros((4,))})
        text = daemon.scrape()
    daemon.assert_stops_cleanly()
    samples = parse_metrics(text)
    # What the daemon was made to do shows.
    test.assertEqual(metric(samples, "diffusiond_model_loads_total", result="ok"), 2)
    test.assertEqual(metric(samples, "diffusiond_model_loads_total", result="rejected"), 1)
    test.assertEqual(metric(samples, "diffusiond_model_evictions_total"), 1)
    test.assertEqual(metric(samples, "diffusiond_grpc_requests_total", method="Step", code="NOT_FOUND"), 1)
    # The new state series read the daemon itself: its queues' sizes (the defaults), readiness, the limit.
    test.assertEqual(metric(samples, "diffusiond_queue_capacity_tasks", queue="compute"), 8)
    test.assertEqual(metric(samples, "diffusiond_queue_workers", queue="load"), 2)
    test.assertEqual(metric(samples, "diffusiond_queue_waiting_tasks", queue="compute"), 0)
    test.assertEqual(metric(samples, "diffusiond_ready"), 1)
    test.assertGreater(metric(samples, "diffusiond_memory_limit_bytes", device="cpu"), 256 << 20)
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names.add(m.group(1))
        if m.group(2) in ("histogram", "summary"):
            names.update(m.group(1) + suffix for suffix in HISTOGRAM_SUFFIXES)
    return names


if __name__ == "__main__":
    unittest.main()
