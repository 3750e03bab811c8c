"""Authentication and authorization against a real daemon (--auth_token_file,
--tls_client_ca): each role against each RPC, no token and bad tokens, the
access file swapped while the daemon runs (as a Kubernetes Secret update
does), a bad file at start and on reload, the refusal metrics, mutual TLS with
certificates from the right CA and from another, diffusionctl's token
sources, and no token in the daemon's log.

What matters for each call is whether it got past the check: a call that
passes may still fail for other reasons (NOT_FOUND for the absent model these
calls name), which is not UNAUTHENTICATED or PERMISSION_DENIED.
"""

import os
import shutil
import subprocess
import time
import unittest

import grpc
from daemon_fixture import Daemon, DaemonTestCase, binary, daemon_env, metric, models_dir, parse_metrics, work_dir

from diffusiond_client import _stubs

_ms, _ds, _cs, _ps, _hs = (_stubs.model_service_pb2, _stubs.denoise_service_pb2, _stubs.cache_service_pb2,
                           _stubs.pipeline_service_pb2, _stubs.health_pb2)
ABSENT = "absent-model"
AUTH_CODES = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
LIST_SERVICES = b"\x3a\x00"  # ServerReflectionRequest{list_services: ""}, encoded by hand

# Every RPC the daemon serves: (method path, kind, request, the least role
# that may call it; None: open). This is the contract of docs/api.md, kept
# here independently of server/method_roles.cc.
RPCS = [
    ("/grpc.health.v1.Health/Check", "unary", _hs.HealthCheckRequest(), None),
    ("/grpc.health.v1.Health/Watch", "first", _hs.HealthCheckRequest(), None),
    (REFLECTION, "reflection", None, "read"),
    ("/diffusiond.v1.ModelService/ListModels", "unary", _ms.ListModelsRequest(), "read"),
    ("/diffusiond.v1.CacheService/GetStats", "unary", _cs.GetStatsRequest(), "read"),
    ("/diffusiond.v1.ModelService/ListAvailable", "unary", _ms.ListAvailableRequest(), "read"),
    ("/diffusiond.v1.CacheService/WatchEvents", "first", _cs.WatchEventsRequest(), "read"),
    ("/diffusiond.v1.ModelService/AcquireLease", "unary", _ms.AcquireLeaseRequest(model_id=ABSENT), "run"),
    ("/diffusiond.v1.ModelService/RenewLease", "unary", _ms.RenewLeaseRequest(lease_id=987654321), "run"),
    ("/diffusiond.v1.ModelService/ReleaseLease", "unary", _ms.ReleaseLeaseRequest(lease_id=987654321), "run"),
    ("/diffusiond.v1.DenoiseService/Step", "unary", _ds.StepRequest(model_id=ABSENT), "run"),
    ("/diffusiond.v1.DenoiseService/Denoise", "stream", _ds.DenoiseRequest(model_id=ABSENT), "run"),
    ("/diffusiond.v1.PipelineService/EncodePrompt", "unary",
     _ps.EncodePromptRequest(text_encoder=ABSENT, prompt="a cat"), "run"),
    ("/diffusiond.v1.PipelineService/Decode", "unary", _ps.DecodeRequest(vae=ABSENT), "run"),
    ("/diffusiond.v1.PipelineService/Generate", "stream", _ps.GenerateRequest(pipeline=ABSENT, prompt="a cat"),
     "run"),
    ("/diffusiond.v1.ModelService/LoadModel", "stream", _ms.LoadModelRequest(path=ABSENT), "admin"),
    ("/diffusiond.v1.ModelService/UnloadModel", "unary", _ms.UnloadModelRequest(model_id=ABSENT), "admin"),
    ("/diffusiond.v1.CacheService/MakeRoom", "unary", _cs.MakeRoomRequest(bytes=1), "admin"),
]


def rpc(name):
    """(path, kind, request) of the RPC whose method is ``name``."""
    return next(r[:3] for r in RPCS if r[0].endswith(f"/{name}"))


ROLES = ["read", "run", "admin"]  # each includes those before it
TOKENS = {role: f"{role}-token-{os.getpid()}-5f0c2a9d7e" for role in ROLES}
BAD_TOKEN = f"bad-token-{os.getpid()}-77c1e0b3aa"


def call(channel, path, kind, request, metadata=()):
    """Makes one call; returns its status code (OK, or the error's)."""
    try:
        if kind == "reflection":
            method = channel.stream_stream(path, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            next(iter(method(iter([LIST_SERVICES]), timeout=20, metadata=metadata)))
        elif kind == "first":  # a stream that does not end: its first message
            method = channel.unary_stream(path, request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=lambda b: b)
            responses = method(request, timeout=20, metadata=metadata)
            next(responses)
            responses.cancel()
        elif kind == "stream":
            method = channel.unary_stream(path, request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=lambda b: b)
            for _ in method(request, timeout=20, metadata=metadata):
                pass
        else:
            method = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=lambda b: b)
            method(request, timeout=20, metadata=metadata)
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


def bearer(token):
    return (("authorization", f"Bearer {token}"),)


def write_secret_volume(folder, files, version):
    """Lays out ``files`` ({name: text}) as a Kubernetes Secret volume does
    (name -> ..data/name, ..data -> ..<version>), or updates one to a new
    version with the same atomic swap of ..data. Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"..{version}"
    data.mkdir()
    for name, text in files.items():
        (data / name).write_text(text)
    tmp = folder / "..data_tmp"
    tmp.symlink_to(data.name)
    os.replace(tmp, folder / "..data")
    for name in files:
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(f"..data/{name}")
    return folder


def access_file(tokens):
    lines = ["# role kind value"] + [f"{role} token {token}" for role, token in tokens.items()]
    return "\n".join(lines) + "\n"


def denials(daemon):
    samples = parse_metrics(daemon.scrape())
    return {reason: metric(samples, "diffusiond_auth_denied_total", reason=reason) or 0
            for reason in ("missing_credentials", "malformed_header", "unknown_token", "unknown_certificate", "role",
                           "unmapped_method")}


def reloads(daemon, result):
    return metric(parse_metrics(daemon.scrape()), "diffusiond_auth_reloads_total", result=result)


class TokenAuthTest(DaemonTestCase):
    """One daemon with a token per role in a Secret-volume layout."""

    @classmethod
    def setUpClass(cls):
        cls.secret = write_secret_volume(work_dir() / "auth-secret", {"tokens": access_file(TOKENS)}, "v1")
        cls.daemon_options = {"extra_args": ("--auth_token_file", str(cls.secret / "tokens"))}
        cls.seen_tokens = set(TOKENS.values()) | {BAD_TOKEN}
        super().setUpClass()
        cls.channel = grpc.insecure_channel(cls.daemon.address)
        cls.addClassCleanup(cls.channel.close)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        super().tearDownClass()
        # After good and refused calls, reloads and the stop: no token, good
        # or bad, in anything the daemon wrote.
        log = cls.daemon.output()
        leaked = [t for t in cls.seen_tokens if t in log]
        if leaked:
            raise AssertionError(f"the daemon's log shows a token ({len(leaked)} of {len(cls.seen_tokens)})")

    def test_ready_line_says_auth_is_on(self):
        self.assertIsNotNone(self.daemon.wait_for_line(r"msg=ready .*auth=on auth_tokens=3 ", 1), self.daemon.output())

    def test_every_served_method_is_in_this_table(self):
        tested = {path for path, _, _, _ in RPCS}
        for module in (_ms, _ds, _cs, _ps, _hs):
            for service in module.DESCRIPTOR.services_by_name.values():
                for method in service.methods:
                    self.assertIn(f"/{service.full_name}/{method.name}", tested)

    def test_each_role_against_each_rpc(self):
        for role, token in TOKENS.items():
            for path, kind, request, needed in RPCS:
                with self.subTest(role=role, method=path):
                    code = call(self.channel, path, kind, request, bearer(token))
                    if needed is None or ROLES.index(role) >= ROLES.index(needed):
                        self.assertNotIn(code, AUTH_CODES, f"{role} was refused {path}")
                    else:
                        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED, f"{role} called {path}")

    def test_no_token_or_a_bad_one_is_unauthenticated_except_for_health(self):
        for metadata in ((), bearer(BAD_TOKEN), (("authorization", f"Basic {TOKENS['admin']}"),),
                         (("authorization", TOKENS["admin"]),)):
            for path, kind, request, needed in RPCS:
                with self.subTest(metadata=len(metadata), method=path):
                    code = call(self.channel, path, kind, request, metadata)
                    if needed is None:
                        self.assertEqual(code, grpc.StatusCode.OK)  # the kubelet's probe
                    else:
                        self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)

    def test_refusals_are_counted_by_reason(self):
        before = denials(self.daemon)
        list_models, load = rpc("ListModels"), rpc("LoadModel")
        call(self.channel, *list_models)
        call(self.channel, *list_models)
        call(self.channel, *list_models, bearer(BAD_TOKEN))
        call(self.channel, *list_models, (("authorization", "Basic x"),))
        call(self.channel, *load, bearer(TOKENS["run"]))
        call(self.channel, "/diffusiond.v1.ModelService/NoSuchMethod", "unary", _ms.ListModelsRequest(),
             bearer(TOKENS["admin"]))
        after = denials(self.daemon)
        self.assertEqual({k: after[k] - before[k] for k in after},
                         {"missing_credentials": 2, "malformed_header": 1, "unknown_token": 1, "role": 1,
                          "unknown_certificate": 0, "unmapped_method": 1})

    def test_the_python_clients_send_their_token(self):
        import diffusiond_client as dc
        with dc.Client(self.daemon.address, timeout=20, token=TOKENS["read"]) as c:
            c.list_models()
            with self.assertRaises(dc.PermissionDeniedError):
                c.make_room(1)
        with dc.Client(self.daemon.address, timeout=20, retry=dc.RetryPolicy(attempts=1),
                       token=BAD_TOKEN) as c:
            with self.assertRaises(dc.UnauthenticatedError):
                c.list_models()

    def test_diffusionctl_takes_the_token_from_a_flag_a_file_or_the_environment(self):
        ctl = binary("DIFFUSIONCTL_BIN", "diffusionctl", required=False)
        if ctl is None:
            self.skipTest("diffusionctl not built")
        token_file = work_dir() / "ctl-token"
        token_file.write_text(TOKENS["run"] + "\n")

        def ctl_run(*args, env=None):
            return subprocess.run([ctl, "--timeout", "20s", "--address", self.daemon.address, *args],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                                  env={**daemon_env(), **(env or {})})

        self.assertEqual(ctl_run("--token", TOKENS["read"], "ls").returncode, 0)
        self.assertEqual(ctl_run("--token_file", str(token_file), "stats").returncode, 0)
        self.assertEqual(ctl_run("ls", env={"DIFFUSIOND_TOKEN": TOKENS["read"]}).returncode, 0)
        self.assertEqual(ctl_run("ls", env={"DIFFUSIOND_TOKEN_FILE": str(token_file)}).returncode, 0)
        refused = ctl_run("--token_file", str(token_file), "make-room", "1MiB")
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("PERMISSION_DENIED", refused.stderr)
        anonymous = ctl_run("ls")
        self.assertEqual(anonymous.returncode, 1)
        self.assertIn("UNAUTHENTICATED", anonymous.stderr)
        self.assertEqual(ctl_run("health").returncode, 0)

    def wait_until(self, condition, what, timeout_s=15):
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                self.fail_with_log(f"not within {timeout_s} s: {what}")
            time.sleep(0.1)

    def test_the_access_file_swapped_while_running(self):
        list_models = rpc("ListModels")
        ok_before = reloads(self.daemon, "ok")
        # A new admin token, the read token removed: the Secret updated.
        rotated = {"admin": f"rotated-admin-{os.getpid()}-0d9b4f", "run": TOKENS["run"]}
        self.seen_tokens.add(rotated["admin"])
        write_secret_volume(self.secret, {"tokens": access_file(rotated)}, "v2")
        self.wait_until(lambda: call(self.channel, *list_models, bearer(rotated["admin"])) == grpc.StatusCode.OK,
                        "the new token works")
        self.assertEqual(call(self.channel, *list_models, bearer(TOKENS["read"])), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(call(self.channel, *list_models, bearer(TOKENS["admin"])), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(reloads(self.daemon, "ok"), ok_before + 1)
        self.assertIsNotNone(self.daemon.wait_for_line(r"msg=\"access file reloaded\".* tokens=2", 5))

        # A broken update: logged and counted; the table in force stays.
        errors_before = reloads(self.daemon, "error")
        write_secret_volume(self.secret, {"tokens": f"admin token {rotated['admin']} trailing words\n"}, "v3")
        self.wait_until(lambda: reloads(self.daemon, "error") == errors_before + 1, "the failed reload is counted")
        self.assertIsNotNone(self.daemon.wait_for_line(r"level=error msg=\"access file not reloaded.*line 1", 5))
        self.assertEqual(call(self.channel, *list_models, bearer(rotated["admin"])), grpc.StatusCode.OK)

        # Back to the first table for the other tests.
        write_secret_volume(self.secret, {"tokens": access_file(TOKENS)}, "v4")
        self.wait_until(lambda: call(self.channel, *list_models, bearer(TOKENS["read"])) == grpc.StatusCode.OK,
                        "the first table is back")


class BadAccessFileTest(unittest.TestCase):
    def test_a_bad_file_stops_the_start_naming_the_line_not_the_token(self):
        path = work_dir() / "bad-tokens"
        path.write_text(f"# wrong order\n{TOKENS['admin']} admin\n")
        daemon = Daemon(models_dir(), extra_args=("--auth_token_file", str(path)))
        with self.assertRaises(AssertionError) as raised:
            daemon.start()
        self.assertEqual(daemon.proc.returncode, 1)
        self.assertIn(f"--auth_token_file {path}: line 2: the first field is not a role", str(raised.exception))
        self.assertNotIn(TOKENS["admin"], daemon.output())


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder):
    """Two CAs; the server's certificate and three clients': backend (CN) and
    operator (subject) from the first CA, stranger from the first CA but in no
    entry, and backend again from the second CA. EC keys: fast to make."""
    folder.mkdir(parents=True, exist_ok=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca1", "ca2"):
        openssl("req", "-x509", *key, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "1", "-subj",
                f"/CN=diffusiond test {ca}", cwd=folder)
    (folder / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    leaves = [("server", "ca1", "/CN=localhost", "server.ext"), ("backend", "ca1", "/CN=backend", None),
              ("operator", "ca1", "/O=diffusiond-test/CN=operator", None), ("stranger", "ca1", "/CN=stranger", None),
              ("backend-ca2", "ca2", "/CN=backend", None)]
    for name, ca, subject, ext in leaves:
        openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=folder)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "1", *(["-extfile", ext] if ext else []), cwd=folder)
    return folder


@unittest.skipIf(shutil.which("openssl") is None, "openssl is not installed")
class MutualTlsTest(DaemonTestCase):
    """TLS asking for client certificates signed by ca1; their CN or subject
    gives the role, through the same access file as tokens."""

    @classmethod
    def setUpClass(cls):
        cls.certs = make_certificates(work_dir() / "mtls")
        tokens = cls.certs / "access"
        tokens.write_text(f"run cn backend\nadmin subject CN=operator,O=diffusiond-test\n"
                          f"read token {TOKENS['read']}\n")
        c = cls.certs
        cls.daemon_options = {"extra_args": ("--tls_cert", str(c / "server.pem"), "--tls_key", str(c / "server.key"),
                                             "--tls_client_ca", str(c / "ca1.pem"),
                                             "--auth_token_file", str(tokens))}
        super().setUpClass()

    def channel(self, client=None):
        c = self.certs
        creds = grpc.ssl_channel_credentials(
            root_certificates=(c / "ca1.pem").read_bytes(),
            private_key=(c / f"{client}.key").read_bytes() if client else None,
            certificate_chain=(c / f"{client}.pem").read_bytes() if client else None)
        channel = grpc.secure_channel(self.daemon.address, creds,
                                      options=[("grpc.ssl_target_name_override", "localhost")])
        self.addCleanup(channel.close)
        return channel

    def test_the_certificate_gives_its_role(self):
        step, load = rpc("Step"), rpc("LoadModel")
        backend = self.channel("backend")
        self.assertNotIn(call(backend, *step), AUTH_CODES)
        self.assertEqual(call(backend, *load), grpc.StatusCode.PERMISSION_DENIED)
        self.assertNotIn(call(self.channel("operator"), *load), AUTH_CODES)  # by its whole subject

    def test_a_certificate_in_no_entry_is_unauthenticated(self):
        before = denials(self.daemon)["unknown_certificate"]
        self.assertEqual(call(self.channel("stranger"), *rpc("ListModels")), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(denials(self.daemon)["unknown_certificate"], before + 1)

    def test_a_certificate_from_another_ca_is_refused_at_the_handshake(self):
        channel = self.channel("backend-ca2")
        code = call(channel, *rpc("Check"))  # even health: no connection
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)

    def test_without_a_certificate_a_token_still_works(self):
        channel = self.channel()
        self.assertEqual(call(channel, *rpc("ListModels"), bearer(TOKENS["read"])), grpc.StatusCode.OK)
        self.assertEqual(call(channel, *rpc("ListModels")), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(call(channel, *rpc("Check")), grpc.StatusCode.OK)


if __name__ == "__main__":
    unittest.main()
