"""Progress of a long command on stderr.

The pipeline reports by log lines (``log(msg)``), one when a stage starts
and one when it ends.  On a terminal, a stage that has been running for more
than ``DELAY`` seconds gets a spinner with its elapsed time under the last
line, so a minute of Gröbner extraction or C generation does not look like a
hang; it is erased before the next line.  Anywhere else (a pipe, a CI log)
only the plain lines are written, so logs stay diffable.

``Bar`` counts items (``fmigen sweep``'s runs) with their rate and ETA: a
status line redrawn in place on a terminal (``Progress.status``), a plain
line every 10 % or 10 s otherwise.

``stage`` starts a pipeline stage with the time the same stage of the same
mechanism took last time (``StageTimes``, kept beside the caches), so a
build of minutes says how long it is expected to take: "(last build: 155 s)"
on the line, and the spinner counts up to it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

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
        #: a status line (Bar) is showing: the spinner keeps quiet
        self._status = False
        #: seconds the current stage took last time (``stage``), or None
        self._expected = None

    def __call__(self, msg: str, expected: float | None = None):
        with self._lock:
            self._erase()
            self._status = False
            print(msg, file=self.stream, flush=True)
            self._since = time.monotonic()
            self._expected = expected

    def status(self, text: str):
        """Redraw the last line in place (terminals only: callers check
        ``spinner``); the next log line or ``__exit__`` erases it."""
        with self._lock:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
            self._shown = True
            self._status = True

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
                if elapsed >= DELAY and not self._status:
                    of = f" of about {self._expected:.0f} s" if self._expected else ""
                    self.stream.write(f"\r\033[K      {FRAMES[k % len(FRAMES)]} {elapsed:.0f} s{of}")
                    self.stream.flush()
                    self._shown = True
                    k += 1


class Bar:
    """Progress of ``total`` items on ``log``: ``update(done, failed)``.  On
    a terminal (``log`` a ``Progress`` with its spinner on) one status line
    with a bar, the rate and the ETA, redrawn at most 10 times a second;
    otherwise a plain line at every 10 % or 10 s, and one at the end."""

    def __init__(self, log, total: int, label: str = "", width: int = 30):
        self.log = log or (lambda msg: None)
        self.total = max(0, int(total))
        self.label = label
        self.width = width
        self.tty = isinstance(log, Progress) and log.spinner
        self.t0 = time.monotonic()
        self._last_draw = 0.0
        self._last_line = (-1, self.t0)   # (decile, time) of the last plain line
        self.done = self.failed = 0

    def text(self, now=None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = f"{left / rate:.0f} s" if rate > 0 else "?"
        failed = f", {self.failed} failed" if self.failed else ""
        head = f"{self.label}: " if self.label else ""
        return f"{head}{self.done}/{self.total}{failed}, {rate:.1f}/s, ETA {eta}"

    def update(self, done: int, failed: int = 0):
        self.done, self.failed = done, failed
        now = time.monotonic()
        if self.tty:
            if now - self._last_draw >= 0.1 or done >= self.total:
                frac = done / self.total if self.total else 1.0
                filled = int(round(frac * self.width))
                self.log.status(f"[{'#' * filled}{'.' * (self.width - filled)}] {self.text(now)}")
                self._last_draw = now
            return
        decile = int(10 * done / self.total) if self.total else 10
        if done < self.total and (decile > self._last_line[0] or now - self._last_line[1] >= 10.0):
            self.log(self.text(now))
            self._last_line = (decile, now)

    def close(self):
        """The final line: total, failures, overall rate."""
        elapsed = time.monotonic() - self.t0
        if self.tty:
            self.log.status("")
        rate = self.done / elapsed if elapsed > 0 else 0.0
        failed = f", {self.failed} failed" if self.failed else ""
        head = f"{self.label}: " if self.label else ""
        self.log(f"{head}{self.done}/{self.total} done{failed} in {elapsed:.2f} s ({rate:.1f}/s)")


class StageTimes:
    """How long each stage of each mechanism's build took last time, in
    ``stage_times.json`` under the cache directory (``FMIGEN_CACHE``); a
    missing or unreadable file is an empty history, never an error."""

    def __init__(self, path: Path | None = None):
        if path is None:
            from fmigen.kinematics.groebner import CACHE_DIR
            path = CACHE_DIR / "stage_times.json"
        self.path = Path(path)

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def last(self, mechanism: str, stage: str) -> float | None:
        value = self._read().get(mechanism, {}).get(stage)
        return float(value) if isinstance(value, (int, float)) else None

    def remember(self, mechanism: str, seconds: dict):
        data = self._read()
        data.setdefault(mechanism, {}).update({k: round(float(v), 2) for k, v in seconds.items()})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            tmp.replace(self.path)     # atomic: parallel builds never read half a file
        except OSError:
            pass


def stage(log, msg: str, expected: float | None):
    """Log a stage's first line with the time it took last time: on the line
    when that was long enough to matter (≥ 5 s), and to the spinner of a
    ``Progress``."""
    if expected is not None and expected >= 5:
        msg += f" (last build: {expected:.0f} s)"
    if isinstance(log, Progress):
        log(msg, expected=expected)
    else:
        log(msg)
