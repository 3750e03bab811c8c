"""Clients that vanish or stall: a LoadModel or Denoise client killed with SIGKILL mid-call, a
Denoise client that never reads its stream, and loads bounded by a deadline (the client's, or the
daemon's --load_timeout). Afterwards nothing the client held may stay held: pins, leases,
reservations, compute slots. docs/reliability.md#vanishing-clients has the figures."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

import grpc

import diffusiond_client as dc
from daemon_fixture import (DEMO_MODEL, Daemon, DaemonTestCase, caption, conditioning, metric, models_dir,
                            parse_metrics, slow_model)

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vanishing_client.py")
MiB = 1 << 20
# Loads to act in the middle of: SLOW runs to its end where a test needs that (about 1 s on
# 2 cores), LONG, 2.1 GB of bfloat16, cannot end within a second even from the page cache.
SLOW_LAYERS, LONG_LAYERS = 150, 1000


class ClientProcess:
    """vanishing_client.py in a child process; its output lines are collected as they come."""

    def __init__(self, address, *args):
        self.proc = subprocess.Popen([sys.executable, CLIENT, address, *map(str, args)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, prefix, timeout_s=60):
        """Returns the first line starting with ``prefix``; AssertionError at the timeout or exit."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                if time.monotonic() > deadline or not self._reader.is_alive():
                    raise AssertionError(f"the client printed no {prefix!r} line: {self.lines}")
                self._cond.wait(0.1)

    def kill(self):
        """SIGKILL: no cancel reaches the daemon, only the connection's end."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)
        self.proc.stdout.close()


def poll(condition, timeout_s, interval_s=0.02):
    """Returns the seconds until ``condition()`` held, or None at the timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return time.monotonic() - start
        time.sleep(interval_s)
    return None


class RssSampler:
    """Samples the daemon's VmRSS every 20 ms on a thread; ``peak`` is the largest sample."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self.daemon.rss_bytes())
            self._stop.wait(0.02)

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        return max(self.samples)


class VanishingClientTest(DaemonTestCase):
    """A daemon whose clients die (SIGKILL) or stop reading in the middle of their calls."""

    # Room for LONG's reservation (1.1 GB); the tests that load it cancel it within a second.
    daemon_options = {"ram_budget": "2GiB"}

    @classmethod
    def setUpClass(cls):
        cls.slow = slow_model(SLOW_LAYERS)
        cls.long = slow_model(LONG_LAYERS)
        super().setUpClass()

    def models(self):
        return {m.model_id: m for m in self.client.list_models()}

    def budget(self):
        return self.client.stats().budget("cpu")

    def cache_line(self, event, model):
        return self.daemon.wait_for_line(rf"msg=cache event={event} model={re.escape(model)}\b.*", 30)

    def assert_back_to(self, baseline):
        """Used and reserved bytes equal ``baseline``'s once what the test loaded is unloaded."""
        b = self.budget()
        self.assertEqual((b.committed_bytes, b.reserved_bytes), (baseline.committed_bytes, 0),
                         f"accounting did not return to the baseline {baseline}")

    def test_a_killed_client_that_loaded_alone_cancels_its_load_and_frees_the_reservation(self):
        baseline = self.budget()

        def loads_cancelled():
            return metric(parse_metrics(self.daemon.scrape()), "diffusiond_model_loads_total", result="cancelled")

        cancelled = loads_cancelled()
        child = ClientProcess(self.daemon.address, "load", self.long, "solo")
        first = child.wait_for("progress")
        child.kill()
        killed_at = time.monotonic()
        failed = self.cache_line("load_failed", "solo")
        self.assertIsNotNone(failed, f"the load was not stopped\n{self.daemon.output()}")
        self.assertIn("code=CANCELLED", failed.group(0))
        done = re.search(r"cancelled after (\d+) of (\d+) tensors", failed.group(0))
        self.assertIsNotNone(done, failed.group(0))
        self.assertLess(int(done.group(1)), int(done.group(2)), "the load had finished: nothing was tested")
        print(f"note: killed at {first!r} ({len(child.lines)} lines); the load stopped after {done.group(1)} of "
              f"{done.group(2)} tensors, {time.monotonic() - killed_at:.2f} s after the kill")
        self.assertNotIn("solo", self.models())
        self.assert_back_to(baseline)
        # The metrics observe the event after the log line does.
        self.assertIsNotNone(poll(lambda: loads_cancelled() == cancelled + 1, 5),
                             f"diffusiond_model_loads_total{{result=\"cancelled\"}} is {loads_cancelled()}")

    def test_a_killed_client_sharing_a_load_with_a_live_one_leaves_the_load_running_for_it(self):
        baseline = self.budget()
        child = ClientProcess(self.daemon.address, "load", self.slow, "shared")
        child.wait_for("progress")
        progress, result = [], {}
        joined = threading.Event()

        def live():
            def seen(p):
                progress.append(p)
                joined.set()
            try:
                result["info"] = self.client.load_model(self.slow, model_id="shared", on_progress=seen)
            except dc.DiffusiondError as e:
                result["error"] = e
            joined.set()

        thread = threading.Thread(target=live)
        thread.start()
        self.assertTrue(joined.wait(60))
        # Progress proves the live client joined the load in flight, not a finished model.
        self.assertTrue(progress, f"the live client did not join the load: {result}")
        child.kill()
        at_kill = progress[-1].tensors_done
        thread.join(120)
        self.assertIn("info", result, result)
        self.assertGreater(progress[-1].tensors_done, at_kill, "no progress after the kill")
        print(f"note: the live client saw tensor {at_kill} of {progress[-1].total_tensors} at the kill, then "
              f"{progress[-1].tensors_done}, and got the model")
        # One load, run to its end: not cancelled, not restarted.
        self.assertIsNotNone(self.cache_line("loaded", "shared"))
        self.assertNotRegex(self.daemon.output(), r"event=load_failed model=shared\b")
        self.assertEqual(len(re.findall(r"event=loaded model=shared\b", self.daemon.output())), 1)
        self.assertEqual(self.models()["shared"].pins, 0)
        self.client.unload_model("shared", wait=False)
        self.assert_back_to(baseline)

    def test_a_load_whose_only_client_passes_its_deadline_is_cancelled(self):
        baseline = self.budget()
        with self.assertRaises(dc.DeadlineExceededError):
            self.client.load_model(self.long, model_id="late", timeout=0.5)
        failed = self.cache_line("load_failed", "late")
        self.assertIsNotNone(failed, self.daemon.output())
        print(f"note: {failed.group(0)}")
        self.assertIn("code=CANCELLED", failed.group(0))
        self.assertIn("cancelled after", failed.group(0))
        self.assertNotIn("late", self.models())
        self.assert_back_to(baseline)

    def test_a_killed_denoise_client_releases_its_pin_at_once_and_its_lease_at_the_ttl(self):
        baseline = self.budget()
        self.client.load_model(DEMO_MODEL, model_id="killed")
        ttl_s = 2
        # 1000 steps of [16, 64, 64]: minutes, unless stopped.
        child = ClientProcess(self.daemon.address, "denoise", "killed", 1000, 16, 64, 64, ttl_s)
        child.wait_for("step")
        leased_by = time.monotonic()  # the lease began before the first step
        self.assertEqual(self.models()["killed"].pins, 2, "the denoise and the lease")
        self.assertGreater(self.budget().reserved_bytes, 0, "the denoise's activations")
        child.kill()
        to_lease_only = poll(lambda: self.models()["killed"].pins == 1, 30)
        self.assertIsNotNone(to_lease_only, "the denoise kept its pin after its client died")
        self.assertEqual(self.budget().reserved_bytes, 0, "the dead denoise's activations are still reserved")
        with self.assertRaises(dc.FailedPreconditionError):  # the lease still holds it
            self.client.unload_model("killed", wait=False)
        self.assertIsNotNone(poll(lambda: self.models()["killed"].pins == 0, ttl_s + 10),
                             "the dead client's lease never expired")
        expired_after = time.monotonic() - leased_by
        # Swept once a second (and at any cache call past the TTL): TTL + 1 s at most, counted
        # from the first step, which came after the lease; the rest is slack for a busy machine.
        self.assertLess(expired_after, ttl_s + 3)
        print(f"note: the denoise's pin went {to_lease_only:.2f} s after the kill; the lease "
              f"{expired_after:.2f} s after the first step (TTL {ttl_s} s)")
        self.client.unload_model("killed", wait=False)
        self.assert_back_to(baseline)

    def test_a_reader_that_never_reads_holds_no_slot_and_bounded_memory(self):
        self.client.load_model(DEMO_MODEL, model_id="unread")
        # The final latents (144 KiB) exceed gRPC's 64 KiB stream window: their write blocks.
        request = dict(shape=(16, 48, 48), steps=2)
        sampler = RssSampler(self.daemon)
        self.client.denoise("unread", conditioning(), **request)  # read: the yardstick
        reading = sampler.stop()
        finished = denoises_finished(self.daemon)
        stalled_client = self.daemon.client()
        self.addCleanup(stalled_client.close)
        sampler = RssSampler(self.daemon)
        started = time.monotonic()
        call = stalled_client.denoise_stream("unread", conditioning(), **request)  # never read
        self.assertIsNotNone(poll(lambda: denoises_finished(self.daemon) > finished, 120),
                             "the unread Denoise never finished on the daemon")
        finished_s = time.monotonic() - started
        time.sleep(0.5)  # what the call holds once its work is gone
        stalled = sampler.stop()
        self.assertFalse(call._call.done(), "the stream was delivered: the reader did not stall it")
        # The work is over while the write waits: no pin, no reservation, a free compute slot.
        self.assertEqual(self.models()["unread"].pins, 0)
        self.assertEqual(self.budget().reserved_bytes, 0)
        self.client.step("unread", step_inputs(), timeout=30)
        # What the call still holds is its undelivered output: 2 step events and the latents.
        self.assertLess(stalled, reading + 16 * MiB)
        print(f"note: a Denoise of {request}: done on the daemon {finished_s:.2f} s after the call began, "
              f"its reader stalled; RSS peak {reading / MiB:.1f} MiB read, {stalled / MiB:.1f} MiB unread")
        stalled_client.close()  # the call ends with its connection
        self.assertIsNotNone(poll(call._call.done, 10))
        self.client.unload_model("unread", wait=False)

    def test_an_unread_stream_with_a_deadline_ends_at_the_deadline_and_frees_its_pin(self):
        self.client.load_model(DEMO_MODEL, model_id="deadline")
        deadline_s = 2
        # 1000 steps of [16, 32, 32]: about a minute unless stopped; its step events (< 100 B
        # each) fit the stream window, the latents would not.
        request = dict(shape=(16, 32, 32), steps=1000)
        sampler = RssSampler(self.daemon)
        self.client.denoise("deadline", conditioning(), shape=(16, 32, 32), steps=8)
        reading = sampler.stop()
        finished = denoises_finished(self.daemon)
        cancelled = denoises_cancelled(self.daemon)
        with self.daemon.client() as stalled_client:
            sampler = RssSampler(self.daemon)
            started = time.monotonic()
            call = stalled_client.denoise_stream("deadline", conditioning(), timeout=deadline_s, **request)
            self.assertIsNotNone(poll(lambda: self.models()["deadline"].pins == 1, 30), "it never ran")
            freed = poll(lambda: self.models()["deadline"].pins == 0, deadline_s + 30)
            self.assertIsNotNone(freed, "the pin outlived the deadline")
            freed_after = time.monotonic() - started
            stalled = sampler.stop()
            self.assertEqual(call.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertGreaterEqual(freed_after, deadline_s - 0.1)
        self.assertLess(freed_after, deadline_s + 2, "not stopped within a step of the deadline")
        self.assertEqual(self.budget().reserved_bytes, 0)
        self.assertEqual(denoises_finished(self.daemon), finished + 1)
        self.assertEqual(denoises_cancelled(self.daemon), cancelled + 1)
        self.client.step("deadline", step_inputs(), timeout=30)  # the compute slot is free
        self.assertLess(stalled, reading + 16 * MiB)
        print(f"note: an unread Denoise of 1000 steps with a {deadline_s} s deadline: pin freed "
              f"{freed_after:.2f} s after the call began; RSS peak {reading / MiB:.1f} MiB read (8 steps), "
              f"{stalled / MiB:.1f} MiB unread")
        self.client.unload_model("deadline", wait=False)


class LoadTimeoutTest(unittest.TestCase):
    """A load no client gives up on still ends: at the daemon's --load_timeout."""

    def test_the_daemons_load_timeout_cancels_a_load_naming_the_model_and_the_timeout(self):
        long = slow_model(LONG_LAYERS)
        daemon = Daemon(models_dir(), ram_budget="2GiB", extra_args=("--load_timeout", "300ms")).start()
        self.addCleanup(daemon.kill)
        with daemon.client() as client:
            with self.assertRaises(dc.DeadlineExceededError) as cm:
                client.load_model(long, model_id="timed", timeout=60)
            self.assertIn('model "timed" did not load within the load timeout (300ms); the load was cancelled',
                          cm.exception.details)
            failed = daemon.wait_for_line(r"event=load_failed model=timed\b.*code=DEADLINE_EXCEEDED.*", 10)
            self.assertIsNotNone(failed, daemon.output())
            print(f"note: {failed.group(0)}")
            budget = client.stats().budget("cpu")
            self.assertEqual((budget.reserved_bytes, budget.committed_bytes), (0, 0))
            # A load that fits the timeout is unaffected.
            self.assertGreater(client.load_model(DEMO_MODEL, model_id="quick", timeout=60).ram_bytes, 0)
        daemon.assert_stops_cleanly()


def denoises_finished(daemon):
    """Denoise calls whose work ended on the daemon (diffusiond_denoise_seconds' count)."""
    return sum(v for n, _, v in parse_metrics(daemon.scrape()) if n == "diffusiond_denoise_seconds_count")


def denoises_cancelled(daemon):
    return sum(v for n, labels, v in parse_metrics(daemon.scrape())
               if n == "diffusiond_denoise_seconds_count" and labels.get("result") == "cancelled")


def step_inputs():
    """One small Step of the demo model."""
    x = dc.WireTensor.from_floats([0.5] * (16 * 8 * 8), (1, 16, 1, 8, 8))
    return {"x": x, "t": dc.WireTensor.from_floats([0.5], (1,)), "cap_feats_0": caption()}


if __name__ == "__main__":
    unittest.main()
