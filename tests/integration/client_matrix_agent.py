"""The agent of tests/integration/test_client_matrix.py: runs each client
command given as a JSON list of {"name", "argv", "env"} (argv[1]) inside the
sandbox, one after the other, and prints one JSON line per client with its
exit status and the tail of its output. It sets nothing up for the clients:
whatever they need must already be in the sandbox's environment and view."""
import json
import os
import subprocess
import sys


def main():
    for case in json.loads(sys.argv[1]):
        env = dict(os.environ, **case.get("env", {}))
        for k in case.get("unset", []):
            env.pop(k, None)
        try:
            r = subprocess.run(case["argv"], capture_output=True, text=True, timeout=60,
                               env=env, cwd="/tmp")
            rc, out = r.returncode, (r.stdout + "\n" + r.stderr)[-3000:]
        except (OSError, subprocess.TimeoutExpired) as e:
            rc, out = -1, repr(e)
        print(json.dumps({"name": case["name"], "rc": rc, "out": out}), flush=True)


main()
