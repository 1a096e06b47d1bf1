"""Progress output for long operations: a one-line bar on a TTY, plain lines otherwise.

The bar shows bytes done/total, rate and ETA over all parallel downloads
together, redrawn at most ten times a second. Off a TTY (CI logs, pipes) each
step is one line, and with quiet nothing is printed. Everything goes to
stderr so stdout stays clean for --json.
"""

from __future__ import annotations

import sys
import threading
import time


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def human_seconds(s: float) -> str:
    s = int(s + 0.5)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """Thread-safe progress reporter. mode: "bar", "lines" or "quiet"."""

    WIDTH = 24
    REDRAW = 0.1

    def __init__(self, mode: str | None = None, stream=None):
        self.stream = stream or sys.stderr
        if mode is None:
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "lines"
        self.mode = mode
        self.lock = threading.Lock()
        self.total = 0
        self.done = 0
        self.label = ""
        self.started = 0.0
        self.last_draw = 0.0
        self.drawn = False

    # -- phases --------------------------------------------------------------
    def message(self, text: str) -> None:
        if self.mode == "quiet":
            return
        with self.lock:
            self._clear()
            print(text, file=self.stream, flush=True)

    def start(self, label: str, total: int) -> None:
        with self.lock:
            self.label, self.total, self.done = label, total, 0
            self.started = time.monotonic()
            self.last_draw = 0.0
        if self.mode == "lines":
            self.message(f"{label}: {human_bytes(total)}")

    def advance(self, nbytes: int) -> None:
        with self.lock:
            self.done += nbytes
            if self.mode != "bar":
                return
            now = time.monotonic()
            if now - self.last_draw >= self.REDRAW:
                self.last_draw = now
                self._draw(now)

    def item_done(self, text: str) -> None:
        """One item (a file) finished; a line off a TTY, nothing extra on the bar."""
        if self.mode == "lines":
            self.message(text)

    def finish(self) -> None:
        if self.mode == "quiet":
            return
        with self.lock:
            if self.mode == "bar":
                self._draw(time.monotonic())
                print(file=self.stream, flush=True)
                self.drawn = False
            else:
                elapsed = max(time.monotonic() - self.started, 1e-9)
                print(f"{self.label}: done, {human_bytes(self.done)} in {elapsed:.1f}s "
                      f"({human_bytes(self.done / elapsed)}/s)", file=self.stream, flush=True)

    def abandon(self) -> None:
        """The work was interrupted: take the bar off its line and draw nothing more, so the
        one line that says so stands alone (workers still winding down may call advance)."""
        if self.lock.acquire(timeout=1):
            try:
                self._clear()
                self.stream.flush()
            finally:
                self.lock.release()
        self.mode = "quiet"

    # -- drawing -------------------------------------------------------------
    def _clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.drawn = False

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        filled = int(frac * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        eta = human_seconds((self.total - self.done) / rate) if rate > 0 and self.total else "--:--"
        self.stream.write(
            f"\r\x1b[K{self.label} [{bar}] {human_bytes(self.done)}/{human_bytes(self.total)} "
            f"{human_bytes(rate)}/s ETA {eta}"
        )
        self.stream.flush()
        self.drawn = True


def quiet() -> Progress:
    return Progress("quiet")
