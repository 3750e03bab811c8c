"""Tests of the credentials both clients present: the bearer token from an
argument, a file (re-read when it changes) or the environment, sent as
``authorization: Bearer`` metadata on every call; the UNAUTHENTICATED error
class; and tls_credentials' argument checks. The daemon's side is
tests/integration/test_auth.py.

Run: PYTHONPATH=clients/python python3 clients/python/tests/test_auth.py
"""

import asyncio
import os
import tempfile
import threading
import unittest

import grpc

import diffusiond_client as dc
from test_client import FakeCache, FakeModels
from test_routing_retries import serve


class TokenRecorder(grpc.ServerInterceptor):
    """Records each call's authorization metadata, and refuses a call
    without one, as the daemon does."""

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()

    def intercept_service(self, continuation, details):
        value = dict(details.invocation_metadata).get("authorization")
        with self.lock:
            self.seen.append(value)
        if value is None:
            def refuse(request, context):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "no credentials")
            return grpc.unary_unary_rpc_method_handler(refuse)
        return continuation(details)


class AuthTest(unittest.TestCase):
    def setUp(self):
        self.recorder = TokenRecorder()
        self.server, self.address = serve(FakeModels(), FakeCache(), interceptors=[self.recorder])
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.server.stop(None)
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # as a Secret update swaps files
        return path

    def test_token_argument_goes_on_every_call(self):
        with dc.Client(self.address, token="tok-0123456789abcdef") as c:
            c.list_models()
            c.stats()
            c.health()
            c.load_model("pipes/dit", model_id="dit")
        self.assertEqual(self.recorder.seen, ["Bearer tok-0123456789abcdef"] * 4)

    def test_async_client_sends_it_too(self):
        async def run():
            async with dc.AsyncClient(self.address, token="tok-0123456789abcdef") as c:
                await c.list_models()
                await c.unload_model("m")
        asyncio.run(run())
        self.assertEqual(self.recorder.seen, ["Bearer tok-0123456789abcdef"] * 2)

    def test_token_file_is_reread_when_it_changes(self):
        path = self.write("token", "first-0123456789abcdef\n")
        with dc.Client(self.address, token_file=path) as c:
            c.list_models()
            self.write("token", "second-0123456789abcdef-longer\n")
            c.list_models()
            os.remove(path)  # a file gone mid-rotation keeps the last token
            c.list_models()
        self.assertEqual(self.recorder.seen, ["Bearer first-0123456789abcdef", "Bearer second-0123456789abcdef-longer",
                                              "Bearer second-0123456789abcdef-longer"])

    def test_resolution_order_and_environment(self):
        path = self.write("token", "from-file\n")
        env = {dc.TOKEN_ENV: "from-env", dc.TOKEN_FILE_ENV: path}
        self.assertEqual(dc.TokenSource.resolve("from-arg", path, env).token(), "from-arg")
        self.assertEqual(dc.TokenSource.resolve(None, path, env).token(), "from-file")
        self.assertEqual(dc.TokenSource.resolve(None, None, env).token(), "from-env")
        self.assertEqual(dc.TokenSource.resolve(None, None, {dc.TOKEN_FILE_ENV: path}).token(), "from-file")
        self.assertIsNone(dc.TokenSource.resolve(None, None, {}))
        with self.assertRaises(FileNotFoundError):
            dc.TokenSource.resolve(None, os.path.join(self.dir.name, "absent"), {})
        with self.assertRaisesRegex(ValueError, "holds no token"):
            dc.TokenSource.resolve(None, self.write("empty", "\n"), {})
        with self.assertRaisesRegex(ValueError, "more than one word") as raised:
            dc.TokenSource.resolve(None, self.write("two", "secret-a secret-b\n"), {})
        self.assertNotIn("secret", str(raised.exception))

    def test_no_token_raises_unauthenticated(self):
        saved = {k: os.environ.pop(k) for k in (dc.TOKEN_ENV, dc.TOKEN_FILE_ENV) if k in os.environ}
        try:
            with dc.Client(self.address, retry=dc.RetryPolicy(attempts=1)) as c:
                with self.assertRaises(dc.UnauthenticatedError) as raised:
                    c.list_models()
            self.assertEqual(raised.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        finally:
            os.environ.update(saved)

    def test_tls_credentials_checks_its_arguments(self):
        with self.assertRaisesRegex(ValueError, "go together"):
            dc.tls_credentials(cert="client.pem")
        self.assertIsInstance(dc.tls_credentials(), grpc.ChannelCredentials)


if __name__ == "__main__":
    unittest.main()
