"""What a client presents to a daemon that checks its callers
(``--auth_token_file``): a bearer token, sent as ``authorization: Bearer
TOKEN`` metadata on every call, and TLS credentials, with a client
certificate for mutual TLS.

The token comes from the first of: the ``token`` argument, the
``token_file`` argument, ``$DIFFUSIOND_TOKEN``, ``$DIFFUSIOND_TOKEN_FILE``
(the order diffusionctl uses). A token file (a Kubernetes Secret mount) is
read again when it changes, so a rotated token is picked up without a new
client.
"""

import os
import threading
from typing import Mapping, Optional, Tuple

import grpc

TOKEN_ENV = "DIFFUSIOND_TOKEN"
TOKEN_FILE_ENV = "DIFFUSIOND_TOKEN_FILE"


def _read_token(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        token = f.read().strip()
    if not token:
        raise ValueError(f"{path} holds no token")
    if any(c.isspace() for c in token):
        raise ValueError(f"{path} holds more than one word")  # the token is never quoted
    return token


class TokenSource:
    """A client's bearer token: fixed, or read from a file and re-read when
    the file's identity (inode, size, mtime) changes. If a changed file cannot
    be read, the last token is kept. Thread-safe."""

    def __init__(self, token: Optional[str] = None, token_file: Optional[str] = None) -> None:
        if (token is None) == (token_file is None):
            raise ValueError("give exactly one of token and token_file")
        self._path = token_file
        self._lock = threading.Lock()
        self._stat: Optional[Tuple[int, int, int, int]] = None
        if token is not None:
            token = token.strip()
            if not token or any(c.isspace() for c in token):
                raise ValueError("a token is one word")
            self._token = token
        else:
            assert token_file is not None
            self._stat = self._identity(token_file)
            self._token = _read_token(token_file)

    @staticmethod
    def _identity(path: str) -> Tuple[int, int, int, int]:
        st = os.stat(path)  # follows the Secret volume's symlinks
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    @classmethod
    def resolve(cls, token: Optional[str] = None, token_file: Optional[str] = None,
                environ: Optional[Mapping[str, str]] = None) -> Optional["TokenSource"]:
        """The source the arguments or, failing them, the environment name;
        None when none does. OSError or ValueError for a file that cannot be
        read or holds no token."""
        env = os.environ if environ is None else environ
        if token:
            return cls(token=token)
        if token_file:
            return cls(token_file=token_file)
        if env.get(TOKEN_ENV):
            return cls(token=env[TOKEN_ENV])
        if env.get(TOKEN_FILE_ENV):
            return cls(token_file=env[TOKEN_FILE_ENV])
        return None

    def token(self) -> str:
        """The current token, after a cheap check of the file."""
        if self._path is None:
            return self._token
        with self._lock:
            try:
                identity = self._identity(self._path)
                if identity != self._stat:
                    self._token = _read_token(self._path)
                    self._stat = identity
            except (OSError, ValueError):
                pass  # mid-rotation or removed: keep the token that worked
            return self._token

    def header(self) -> Tuple[str, str]:
        """The ``authorization`` metadata entry."""
        return ("authorization", f"Bearer {self.token()}")


def tls_credentials(ca: Optional[str] = None, cert: Optional[str] = None,
                    key: Optional[str] = None) -> grpc.ChannelCredentials:
    """TLS channel credentials from PEM files: ``ca`` the roots that sign the
    daemon's certificate (None: the system's), ``cert`` and ``key`` a client
    certificate for a daemon with ``--tls_client_ca`` (both or neither)."""
    if (cert is None) != (key is None):
        raise ValueError("cert and key go together")

    def read(path: Optional[str]) -> Optional[bytes]:
        if path is None:
            return None
        with open(path, "rb") as f:
            return f.read()

    return grpc.ssl_channel_credentials(root_certificates=read(ca), private_key=read(key),
                                        certificate_chain=read(cert))
