"""The openshell CLI on a pty of its own, as a person's terminal runs it
(optionally of a given size), for the terminal tests of exec, connect and
foreground create."""

import fcntl
import os
import pty
import select
import struct
import termios
import time

from tests.lib.gateway_util import CLI


class Terminal:
    def __init__(self, argv, env, rows=None, cols=None):
        self.pid, self.master = pty.fork()
        if self.pid == 0:
            if rows and cols:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(CLI, [CLI, *argv], env)
        self.out = b""

    def type(self, text):
        os.write(self.master, text.encode() if isinstance(text, str) else text)

    def _read(self, until, timeout=30):
        """Reads until until() holds, the pty closes, or timeout."""
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the CLI and its terminal are gone
                return
            if not chunk:
                return
            self.out += chunk

    def read_until(self, marker, timeout=30):
        self._read(lambda: marker in self.out, timeout)
        assert marker in self.out, self.out
        return self.out

    def finish(self):
        self._read(lambda: False)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.master)
        return os.WEXITSTATUS(status)
