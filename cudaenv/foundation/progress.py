"""Progress output for long operations: a one-line bar on a TTY, plain lines otherwise.

An install runs in phases (download, unpack, link), each started, advanced and
finished here with its own total, so each shows its own bytes, rate and ETA.
A phase's total is the work it has to do: for the download, only the bytes the
network still has to send (a cached archive or the part of a file fetched by
an earlier run is not downloaded now, so it is counted apart and never in the
rate). When an item turns out to need more or less work than planned (a cached
copy that fails verification, a server that ignores Range), item_finished
corrects the total, so the finish line states what really happened and equals
what the caller reports (install's summary and --json).

On a TTY the bar is redrawn at most ten times a second and replaced by the
phase's finish line; off a TTY (CI logs, pipes) each step is one line, and with
quiet nothing is printed. Everything goes to stderr so stdout stays clean for --json.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from . import terminal

# Back to the line's start and erase it: the bar redraws in place (past the terminal guard).
ERASE_LINE = "\r\x1b[K"


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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
        self.label = ""
        self.unit = "bytes"
        self.verb = ""
        self.skipped_as = ""
        self.total = 0
        self.done = 0
        self.items = 0
        self.items_done = 0
        self.skipped = 0
        self.skipped_bytes = 0
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

    def start(self, label: str, total: int, items: int = 0, unit: str = "bytes", verb: str = "done",
              skipped_as: str = "cached", note: str = "") -> None:
        """Begin a phase of `total` units of work (bytes, or a count of `unit`) over `items` archives.

        The finish line says "<total> <verb>"; `skipped_as` names an item that
        needed no work (a cached archive); `note` ends the start line (what is
        not counted, and why)."""
        with self.lock:
            self.label, self.unit, self.verb, self.skipped_as = label, unit, verb, skipped_as
            self.total, self.done = total, 0
            self.items, self.items_done, self.skipped, self.skipped_bytes = items, 0, 0, 0
            self.started = time.monotonic()
            self.last_draw = 0.0
            if self.mode == "bar":
                self._draw(self.started)
        if self.mode == "lines":
            what = f"{_plural(items, 'archive')}, {self._amount(total)}" if items else self._amount(total)
            self.message(f"{label}: {what}" + (f" {note}" if note else ""))

    def advance(self, nbytes: int) -> None:
        with self.lock:
            self.done += nbytes
            if self.mode != "bar":
                return
            now = time.monotonic()
            if now - self.last_draw >= self.REDRAW:
                self.last_draw = now
                self._draw(now)

    def item_finished(self, planned: int, done: int, skipped_size: int | None = None) -> None:
        """An item of the phase finished after `done` units of work (already advanced) where
        `planned` were expected: the total follows what happened. `skipped_size`: the item
        needed no work (a cached archive of that many bytes), counted apart from the rate."""
        with self.lock:
            self.total += done - planned
            self.items_done += 1
            if skipped_size is not None:
                self.skipped += 1
                self.skipped_bytes += skipped_size
            if self.mode == "bar":
                self._draw(time.monotonic())

    def item_done(self, text: str) -> None:
        """One item (a file) finished; a line off a TTY, nothing extra on the bar."""
        if self.mode == "lines":
            self.message(text)

    def finish(self) -> None:
        if self.mode == "quiet":
            return
        with self.lock:
            self._clear()
            print(self._summary(time.monotonic()), file=self.stream, flush=True)

    def clear(self) -> None:
        """Take the bar off the line, so an error printed next starts a line of its own."""
        with self.lock:
            self._clear()
            self.stream.flush()

    # -- text ----------------------------------------------------------------
    def _amount(self, n: float) -> str:
        return human_bytes(n) if self.unit == "bytes" else _plural(int(n), self.unit)

    def _skipped_text(self) -> str:
        if not self.skipped:
            return ""
        size = f" ({human_bytes(self.skipped_bytes)})" if self.skipped_bytes else ""
        return f"{self.skipped} of {self.items_done} {self.skipped_as}{size}"

    def _summary(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        body = f"{self._amount(self.done)} {self.verb}"
        if self.done:
            rate = f" ({human_bytes(self.done / elapsed)}/s)" if self.unit == "bytes" else ""
            body += f" in {elapsed:.1f}s{rate}"
        skipped = self._skipped_text()
        return f"{self.label}: {body}" + (f"; {skipped}" if skipped else "")

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
            terminal.control(self.stream, ERASE_LINE)
            self.drawn = False

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return 80

    def _draw(self, now: float) -> None:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        done = self._amount(self.done) if self.unit == "bytes" else str(self.done)
        figures = f"{done}/{self._amount(self.total)}"
        if self.total > 0:
            # A rate and ETA only for work being done, never for what needed none.
            eta = human_seconds(max(self.total - self.done, 0) / rate) if rate > 0 else "--:--"
            figures += f" {human_bytes(rate)}/s ETA {eta}" if self.unit == "bytes" else f" ETA {eta}"
        if self.items:
            figures += f" {self.items_done}/{self.items}"
        if self.skipped:
            figures += f", {self.skipped} {self.skipped_as}"
        # A line that wraps cannot be redrawn in place: on a narrow terminal the bar
        # gives way first, then the end of the figures.
        room = self._columns() - 1
        width = min(self.WIDTH, room - len(self.label) - len(figures) - 4)
        frac = min(self.done / self.total, 1.0) if self.total > 0 else 1.0
        filled = int(frac * width)
        bar = f" [{'#' * filled}{'-' * (width - filled)}]" if width >= 4 else ""
        terminal.control(self.stream, ERASE_LINE)
        self.stream.write(f"{self.label}{bar} {figures}"[:room])
        self.stream.flush()
        self.drawn = True


def quiet() -> Progress:
    return Progress("quiet")
