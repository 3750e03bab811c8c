"""A client that test_vanishing.py kills mid-call: runs one call against a daemon and prints a line
per event it receives, flushed at once, so the test knows how far the call got before the kill.

  vanishing_client.py ADDRESS load PATH MODEL_ID
  vanishing_client.py ADDRESS denoise MODEL_ID STEPS C H W LEASE_TTL_S

``load`` prints ``progress <tensors_done> <total_tensors>`` per progress event. ``denoise`` first
takes a lease of LEASE_TTL_S seconds on the model (``lease <id>``), then prints ``step <n>`` per
step. Both end with ``done`` or ``error <CODE>``.
"""

import sys

import diffusiond_client as dc
from daemon_fixture import conditioning


def say(*words):
    print(*words, flush=True)


def main(address, command, *args):
    with dc.Client(address, timeout=600) as client:
        try:
            if command == "load":
                path, model_id = args
                client.load_model(path, model_id=model_id,
                                  on_progress=lambda p: say("progress", p.tensors_done, p.total_tensors))
            elif command == "denoise":
                model_id, steps, c, h, w, ttl = args
                say("lease", client.acquire_lease(model_id, ttl_seconds=float(ttl)))
                client.denoise(model_id, conditioning(), shape=(int(c), int(h), int(w)), steps=int(steps),
                               on_step=lambda e: say("step", e.step))
            else:
                raise SystemExit(f"unknown command {command!r}")
        except dc.DiffusiondError as e:
            say("error", e.code.name)
            return 1
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
