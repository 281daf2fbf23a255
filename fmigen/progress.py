"""Progress of a long command on stderr.

The pipeline reports by log lines (``log(msg)``), one when a stage starts
and one when it ends.  On a terminal, a stage that has been running for more
than ``DELAY`` seconds gets a spinner with its elapsed time under the last
line, so a minute of Gröbner extraction or C generation does not look like a
hang; it is erased before the next line.  Anywhere else (a pipe, a CI log)
only the plain lines are written, so logs stay diffable.
"""

from __future__ import annotations

import sys
import threading
import time

#: seconds of silence before the spinner appears
DELAY = 2.0
FRAMES = "|/-\\"


class Progress:
    """A ``log`` callable writing to ``stream``; a spinner thread while a
    line is the last one for longer than ``DELAY`` (terminals only).  Use as
    a context manager so the spinner stops with the command."""

    def __init__(self, stream=None, spinner=None):
        self.stream = stream or sys.stderr
        self.spinner = self.stream.isatty() if spinner is None else spinner
        self._lock = threading.Lock()
        self._since = time.monotonic()
        self._shown = False
        self._stop = threading.Event()
        self._thread = None

    def __call__(self, msg: str):
        with self._lock:
            self._erase()
            print(msg, file=self.stream, flush=True)
            self._since = time.monotonic()

    def __enter__(self):
        if self.spinner:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._erase()
        return False

    def _erase(self):
        if self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False

    def _spin(self):
        k = 0
        while not self._stop.wait(0.1):
            with self._lock:
                elapsed = time.monotonic() - self._since
                if elapsed >= DELAY:
                    self.stream.write(f"\r\033[K      {FRAMES[k % len(FRAMES)]} {elapsed:.0f} s")
                    self.stream.flush()
                    self._shown = True
                    k += 1
