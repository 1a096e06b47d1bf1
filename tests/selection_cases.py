"""The one table of selection cases. Python (cudaenv.selecting.selection), the POSIX sh
shim (shims/select.sh) and the bash, zsh and fish hooks must all agree on it.

A case describes a sandbox:
  managed   releases installed in the store ($CUDAENV_ROOT/versions/<release>)
  system    releases of toolkits found outside cudaenv, at <tmp>/sys/cuda-<release>
  files     version files relative to <tmp>/proj, with their exact bytes
  global_   the bytes of $CUDAENV_ROOT/version, or None
  env       extra environment (CUDAENV_VERSION); "{proj}" in a value is <tmp>/proj
  cwd       where the command runs, relative to <tmp>/proj
and what must happen:
  ("ok", "managed:13.0.2")      the managed toolkit 13.0.2 is selected
  ("ok", "system:12.8.1")       the discovered toolkit of that release
  ("invalid", "where", line)    exit 1; stderr names `where` (a path relative to
                                <tmp>, or CUDAENV_VERSION) and the line number
  ("invalid", "where", line, "'shown'")  ... and shows the value exactly so
  ("missing", "12.4")           exit 127; stderr says `cudaenv install 12.4`
  ("too-large", "where")        exit 1; stderr names `where` and the size rule
  ("not-regular", "where", "a FIFO")  exit 1; stderr names `where` and what it is

Shared stores (CUDAENV_SHARED_ROOTS): `shared` maps a store's name to its
releases, each store at <tmp>/shared-<name>, owned by its admin and rehashed
by them. The user's rehash runs with the setting listing them in that order;
`shared_roots`, when given, is the setting afterwards ({name} stands for a
store's path), so a changed setting meets a table built for the old one. `shared_after` installs more there and
`shared_gone` removes some (with the admin's rehash) after the user's rehash,
as an admin does while users' tables are built. A store that is not safe from
other users (it or a directory above it another user's, or writable by others;
a sticky directory above is fine) is skipped with a one-line warning:
`shared_foreign`, `shared_mode` and `shared_above` make one. Expectations:
  ("ok", "shared:<name>:13.0.2")  that store's toolkit is selected
  ("bad-setting", "CUDAENV_SHARED_ROOTS")  exit 1, one line naming the setting
`shared_global` maps a store's name to the bytes of its global version file
(`cudaenv global` run by its admin): a user with no version file of their own
gets the first such store's version before `system`.

Files that are not plain bytes (`special`): "dir", "fifo" (a real mkfifo), "dangling"
(a symlink to nothing), "loop" (a symlink to itself), "device" (a node like
/dev/zero, which a reader that waits for a newline would read forever),
"device-link" (a symlink to /dev/null), "link:<rel>", "mode:<octal>" (a directory).
`sticky` directories (relative to <tmp>/proj, "" for proj itself) get mode
1777 like /tmp; `foreign` files are handed to an unprivileged user made for the
test; `warn` is text stderr must hold (a warning on an otherwise good run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEEP = "a/b/c/d/e"  # five levels below the project root
MAX_BYTES, MAX_LINES, MAX_LINE = 2048, 32, 128  # cudaenv/selecting/versionfile.py; test_selection checks they agree


@dataclass
class Case:
    id: str
    expect: tuple
    managed: list = field(default_factory=list)
    system: list = field(default_factory=list)
    files: dict = field(default_factory=dict)
    global_: bytes | None = None
    env: dict = field(default_factory=dict)
    cwd: str = DEEP
    path: list = field(default_factory=list)
    conda: str | None = None
    special: dict = field(default_factory=dict)
    sticky: list = field(default_factory=list)
    foreign: list = field(default_factory=list)
    warn: str | None = None
    shared: dict = field(default_factory=dict)
    shared_roots: str | None = None
    shared_after: dict = field(default_factory=dict)
    shared_gone: dict = field(default_factory=dict)
    shared_global: dict = field(default_factory=dict)  # store name -> bytes of its `version` file
    # Managed toolkits copied into / deleted from versions/ by hand after the rehash.
    managed_after: list = field(default_factory=list)
    managed_gone: list = field(default_factory=list)
    # Who may write a shared store, set after the user's rehash (so the table is stale when
    # shared_after changed the store): `shared_foreign` stores are handed to an unprivileged user,
    # `shared_mode` gives a store a mode, `shared_above` puts every store in <tmp>/above with that mode.
    shared_foreign: list = field(default_factory=list)
    shared_mode: dict = field(default_factory=dict)
    shared_above: int | None = None
    shared_other_group: list = field(default_factory=list)  # stores whose group is the other user's
    # Discovered (system) toolkits deleted after the rehash.
    system_gone: list = field(default_factory=list)


V = ".cuda-version"
TWO = ["12.8.1", "13.0.0", "13.0.2"]

CASES = [
    # precedence and walk-up
    Case("nothing-anywhere", ("missing", "system")),
    Case("default-system", ("ok", "system:12.8.1"), system=["12.8.1"]),
    Case("system-first-is-newest", ("ok", "system:13.0.2"), system=["12.8.1", "13.0.2"]),
    Case("global", ("ok", "managed:12.8.1"), managed=TWO, global_=b"12.8\n"),
    Case("walk-up-five", ("ok", "managed:13.0.2"), managed=TWO, files={V: b"13.0\n"}),
    Case("nearest-wins", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"13.0\n", "a/b/c/" + V: b"12.8.1\n"}),
    Case("file-in-cwd", ("ok", "managed:13.0.0"), managed=TWO, files={DEEP + "/" + V: b"13.0.0\n"}),
    # A directory name holding a newline on the way up: a reader that splits the path there
    # misses the file inside it and takes the one above.
    Case("walk-up-through-a-newline-name", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"13.0\n", "new\nline/" + V: b"12.8\n"}, cwd="new\nline/a/b"),
    Case("file-beats-global", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"12\n"}, global_=b"13\n"),
    Case("env-beats-file", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"13.0\n"},
         env={"CUDAENV_VERSION": "12.8"}),
    Case("env-system", ("ok", "system:12.8.1"), managed=TWO, system=["12.8.1"], files={V: b"13.0\n"},
         env={"CUDAENV_VERSION": "system"}),
    Case("env-blank-is-unset", ("ok", "managed:13.0.2"), managed=TWO, files={V: b"13\n"},
         env={"CUDAENV_VERSION": "  "}),
    # prefixes
    Case("major-prefix", ("ok", "managed:13.0.2"), managed=TWO, files={V: b"13\n"}),
    Case("minor-prefix-newest-patch", ("ok", "managed:13.0.2"), managed=TWO, files={V: b"13.0\n"}),
    Case("exact", ("ok", "managed:13.0.0"), managed=TWO, files={V: b"13.0.0\n"}),
    Case("managed-before-discovered", ("ok", "managed:12.8.1"), managed=["12.8.1"], system=["12.8.2"],
         files={V: b"12.8\n"}),
    Case("discovered-when-no-managed-match", ("ok", "system:12.6.0"), managed=TWO, system=["12.6.0"],
         files={V: b"12.6\n"}),
    Case("system-word", ("ok", "system:12.6.0"), managed=TWO, system=["12.6.0"], files={V: b"system\n"}),
    Case("not-installed", ("missing", "12.4"), managed=TWO, files={V: b"12.4\n"}),
    Case("not-installed-exact", ("missing", "13.0.1"), managed=TWO, files={V: b"13.0.1\n"}),
    Case("system-none", ("missing", "system"), managed=TWO, files={V: b"system\n"}),
    # system: conda, then PATH (real toolkits only), then discovered
    Case("system-conda-first", ("ok", "conda:12.6.0"), system=["13.0.2"], path=[("toolkit", "12.8.1")],
         conda="12.6.0", files={V: b"system\n"}),
    Case("system-path-before-static", ("ok", "path:12.8.1"), system=["13.0.2"], path=[("toolkit", "12.8.1")]),
    Case("system-path-skips-wrapper", ("ok", "path:12.8.1"), system=["13.0.2"],
         path=[("wrapper", "12.9.1"), ("toolkit", "12.8.1")]),
    Case("system-wrapper-only-falls-back", ("ok", "system:13.0.2"), system=["13.0.2"],
         path=[("wrapper", "12.9.1")]),
    Case("prefix-ignores-path-toolkit", ("missing", "12.8"), managed=["13.0.2"], path=[("toolkit", "12.8.1")],
         files={V: b"12.8\n"}),
    # accepted formatting
    Case("comments-blank-lines", ("ok", "managed:13.0.2"), managed=TWO,
         files={V: b"# pinned for flashinfer\n\n   \n  13.0   # trailing comment\n"}),
    Case("crlf", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"12.8\r\n"}),
    Case("crlf-comments", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"# c\r\n\r\n12.8.1\r\n"}),
    Case("tabs", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"\t12.8\t\n"}),
    Case("no-final-newline", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"12.8"}),
    Case("only-first-value-counts", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"12.8\n../evil\n"}),
    Case("utf8-comment", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: "# für die GPU\n12.8\n".encode()}),
    # a UTF-8 byte order mark (Windows editors write one) at the start of the file is ignored
    Case("utf8-bom", ("ok", "managed:13.0.2"), managed=TWO, files={V: b"\xef\xbb\xbf13.0\n"}),
    Case("utf8-bom-crlf-comment", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"\xef\xbb\xbf# pinned\r\n12.8\r\n"}),
    Case("utf8-bom-no-newline", ("ok", "managed:12.8.1"), managed=TWO, files={V: b"\xef\xbb\xbf12.8"}),
    Case("utf8-bom-not-counted-in-line-length", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"\xef\xbb\xbf" + b"#" * MAX_LINE + b"\n12.8\n"}),
    Case("utf8-bom-global", ("ok", "managed:12.8.1"), managed=TWO, global_=b"\xef\xbb\xbf12.8\r\n"),
    Case("utf8-bom-tool-versions", ("ok", "managed:12.8.1"), managed=TWO,
         files={".tool-versions": b"\xef\xbb\xbfcuda 12.8\n"}),
    Case("utf8-bom-only-at-start", ("invalid", "proj/" + V, 2), managed=TWO, files={V: b"# c\n\xef\xbb\xbf13.0\n"}),
    Case("utf8-bom-twice", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"\xef\xbb\xbf\xef\xbb\xbf13.0\n"}),
    Case("utf8-bom-then-bad-value", ("invalid", "proj/" + V, 1, "'v13'"), managed=TWO,
         files={V: b"\xef\xbb\xbfv13\n"}),
    # .tool-versions (asdf, mise): a `cuda` line, below .cuda-version in the same directory
    Case("tool-versions", ("ok", "managed:12.8.1"), managed=TWO,
         files={".tool-versions": b"python 3.11.7\ncuda 12.8 13.0  # fallbacks are ignored\nnodejs 20\n"}),
    Case("tool-versions-tabs-crlf", ("ok", "managed:13.0.0"), managed=TWO,
         files={".tool-versions": b"# tools\r\n\tcuda\t13.0.0\r\n"}),
    Case("cuda-version-beats-tool-versions", ("ok", "managed:13.0.2"), managed=TWO,
         files={".cuda-version": b"13\n", ".tool-versions": b"cuda 12.8\n"}),
    Case("nearer-tool-versions-beats-farther-cuda-version", ("ok", "managed:12.8.1"), managed=TWO,
         files={".cuda-version": b"13\n", "a/b/.tool-versions": b"cuda 12.8\n"}),
    Case("tool-versions-without-cuda-walks-on", ("ok", "managed:13.0.0"), managed=TWO,
         files={".cuda-version": b"13.0.0\n", "a/b/.tool-versions": b"python 3.12\ncudatoolkit 12\n"}),
    Case("tool-versions-system", ("ok", "system:12.6.0"), managed=TWO, system=["12.6.0"],
         files={".tool-versions": b"cuda system\n"}),
    Case("tool-versions-bad-value", ("invalid", "proj/a/.tool-versions", 2), managed=TWO,
         files={".cuda-version": b"13\n", "a/.tool-versions": b"python 3\ncuda ../../evil\n"}),
    Case("tool-versions-no-value", ("invalid", "proj/.tool-versions", 1), managed=TWO,
         files={".tool-versions": b"cuda\n"}),
    Case("tool-versions-nul", ("invalid", "proj/.tool-versions", 1), managed=TWO,
         files={".tool-versions": b"cuda 1\x002.8\n"}),
    Case("tool-versions-not-installed", ("missing", "12.4"), managed=TWO, files={".tool-versions": b"cuda 12.4\n"}),
    # rejected
    Case("dotdot", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"../x\n"}),
    Case("deep-dotdot", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"../../evil\n"}),
    Case("absolute", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"/abs\n"}),
    Case("prefix-then-dotdot", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13.0/../..\n"}),
    Case("command-substitution", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"$(touch pwned)\n"}),
    Case("backticks", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"`touch pwned`\n"}),
    Case("nul", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13\x00.0\n"}),
    Case("arabic-indic-digits", ("invalid", "proj/" + V, 1), managed=TWO, files={V: "١٣.٠\n".encode()}),
    Case("fullwidth-digits", ("invalid", "proj/" + V, 1), managed=TWO, files={V: "１３\n".encode()}),
    Case("overlong", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"1" * 300 + b"\n"}),
    Case("overlong-comment", ("invalid", "proj/" + V, 2), managed=TWO, files={V: b"# ok\n#" + b"x" * 300 + b"\n13\n"}),
    Case("binary-junk", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"\xff\xfe\x01\x02junk\x7f\n"}),
    Case("five-digit-part", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"12345\n"}),
    Case("five-digit-minor", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13.10000\n"}),
    Case("leading-zero", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"013\n"}),
    Case("four-parts", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13.0.2.1\n"}),
    Case("trailing-dot", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13.\n"}),
    Case("leading-dot", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b".13\n"}),
    Case("v-prefix", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"v13.0\n"}),
    Case("inner-space", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13 0\n"}),
    Case("glob", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13*\n"}),
    Case("semicolon", ("invalid", "proj/" + V, 1), managed=TWO, files={V: b"13;id\n"}),
    Case("value-on-line-3", ("invalid", "proj/" + V, 3), managed=TWO, files={V: b"# c\n\nlatest\n"}),
    Case("empty-file", ("invalid", "proj/" + V, None), managed=TWO, files={V: b""}),
    Case("only-comments", ("invalid", "proj/" + V, None), managed=TWO, files={V: b"# nothing\n\n"}),
    Case("bad-global", ("invalid", "root/version", 1), managed=TWO, global_=b"../../bin\n"),
    Case("bad-env", ("invalid", "CUDAENV_VERSION", None), managed=TWO, env={"CUDAENV_VERSION": "../x"}),
    # only spaces and tabs are trimmed from CUDAENV_VERSION, as from a file's line
    Case("bad-env-newline", ("invalid", "CUDAENV_VERSION", None), managed=TWO, env={"CUDAENV_VERSION": "13.0\n"}),
    Case("bad-env-cr", ("invalid", "CUDAENV_VERSION", None), managed=TWO, env={"CUDAENV_VERSION": "13.0\r"}),
    # a value is shown up to 40 characters, then "..."
    Case("bad-env-shown-40", ("invalid", "CUDAENV_VERSION", None, "'" + "1234567890" * 4 + "'"), managed=TWO,
         env={"CUDAENV_VERSION": "1234567890" * 4}),
    Case("bad-env-shown-cut-at-40", ("invalid", "CUDAENV_VERSION", None, "'" + "1234567890" * 4 + "...'"),
         managed=TWO, env={"CUDAENV_VERSION": "1234567890" * 4 + "x"}),
    Case("bad-file-shown-cut-at-40", ("invalid", "proj/" + V, 1, "'" + "abcdefghij" * 4 + "...'"), managed=TWO,
         files={V: b"abcdefghij" * 5 + b"\n"}),
    Case("bad-env-subst", ("invalid", "CUDAENV_VERSION", None), managed=TWO,
         env={"CUDAENV_VERSION": "$(id)"}),
    Case("bad-nearer-file-not-skipped", ("invalid", "proj/a/" + V, 1), managed=TWO,
         files={V: b"13\n", "a/" + V: b"nope\n"}),
    # bounds: the whole file is read by every implementation, and never more than MAX_BYTES + 1
    Case("at-byte-bound", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: (b"#" + b"x" * 126 + b"\n") * 15 + b"12.8\n" + b"#" * (MAX_BYTES - 15 * 128 - 6) + b"\n"}),
    Case("at-line-bound", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"#\n" * (MAX_LINES - 1) + b"12.8\n"}),
    Case("at-line-bound-no-newline", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"#\n" * (MAX_LINES - 1) + b"12.8"}),
    Case("at-line-length-crlf", ("ok", "managed:12.8.1"), managed=TWO,
         files={V: b"#" * MAX_LINE + b"\r\n12.8\r\n"}),
    # observed: 65,534 bytes of comments, then 13.0, selected 13.0 in the shim but 13.1 in Python
    Case("comments-64k-then-value", ("too-large", "proj/" + V), managed=TWO,
         files={V: (b"#" * 63 + b"\n") * 1023 + b"#" * 62 + b"\n13.0\n"}, global_=b"12\n"),
    Case("one-byte-over", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"12.8\n" + b"#" * (MAX_BYTES - 6) + b"\n\n"}),
    Case("one-line-over", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"12.8\n" + b"\n" * MAX_LINES}),
    # a last line without a newline is a line too
    Case("one-line-over-no-newline", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"#\n" * MAX_LINES + b"12.8"}),
    Case("one-line-over-value-first-no-newline", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"12.8\n" + b"#\n" * (MAX_LINES - 1) + b"#"}),
    Case("value-then-huge-tail", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"12.8\n" + b"# tail\n" * 20000}),
    Case("ten-thousand-comment-lines", ("too-large", "proj/" + V), managed=TWO, files={V: b"# c\n" * 10000}),
    Case("one-megabyte-line", ("too-large", "proj/" + V), managed=TWO, files={V: b"1" * 1_000_000 + b"\n"}),
    Case("megabyte-of-nul", ("too-large", "proj/" + V), managed=TWO, files={V: b"\0" * 1_000_000}),
    # the shell's quick pass stops at a line past the bound and says so without a second pass
    Case("value-then-megabyte-line", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"12.8\n" + b"#" * 1_000_000 + b"\n"}),
    Case("bad-value-then-megabyte-line", ("too-large", "proj/" + V), managed=TWO,
         files={V: b"nope\n" + b"1" * 1_000_000 + b"\n"}),
    Case("tool-versions-megabyte-line", ("too-large", "proj/.tool-versions"), managed=TWO,
         files={".tool-versions": b"cuda 12.8\n" + b"x" * 1_000_000 + b"\n"}),
    Case("tool-versions-too-large", ("too-large", "proj/a/.tool-versions"), managed=TWO,
         files={V: b"13\n", "a/.tool-versions": b"# tools\n" * 300 + b"cuda 12.8\n"}),
    Case("global-too-large", ("too-large", "root/version"), managed=TWO, global_=b"12.8\n" + b"#\n" * 2000),
    # not regular files: an error that names them, never a fall-through (here to the global 12.8)
    Case("directory", ("not-regular", "proj/" + V, "a directory"), managed=TWO, global_=b"12.8\n",
         special={V: "dir"}),
    Case("fifo", ("not-regular", "proj/" + V, "a FIFO"), managed=TWO, global_=b"12.8\n", special={V: "fifo"}),
    Case("dangling-symlink", ("not-regular", "proj/" + V, "leads nowhere"), managed=TWO, global_=b"12.8\n",
         special={V: "dangling"}),
    Case("symlink-loop", ("not-regular", "proj/" + V, "leads nowhere"), managed=TWO, global_=b"12.8\n",
         special={V: "loop"}),
    Case("device", ("not-regular", "proj/" + V, "a device"), managed=TWO, global_=b"12.8\n",
         special={V: "device"}),
    Case("symlink-to-device", ("not-regular", "proj/" + V, "a device"), managed=TWO, global_=b"12.8\n",
         special={V: "device-link"}),
    Case("fifo-nearer-than-good-file", ("not-regular", "proj/a/" + V, "a FIFO"), managed=TWO,
         files={V: b"13\n"}, special={"a/" + V: "fifo"}),
    Case("socket", ("not-regular", "proj/" + V, "a socket"), managed=TWO, global_=b"12.8\n",
         special={V: "socket"}),
    Case("tool-versions-fifo", ("not-regular", "proj/.tool-versions", "a FIFO"), managed=TWO,
         global_=b"12.8\n", special={".tool-versions": "fifo"}),
    Case("global-directory", ("not-regular", "root/version", "a directory"), managed=TWO,
         special={"../root/version": "dir"}),
    Case("symlink-to-good-file", ("ok", "managed:13.0.0"), managed=TWO,
         files={"elsewhere": b"13.0.0\n"}, special={V: "link:elsewhere"}),
    # another user's file in a world-writable sticky directory (like /tmp) is ignored, with a warning
    Case("sticky-foreign-ignored", ("ok", "managed:12.8.1"), managed=TWO, global_=b"12.8\n",
         files={V: b"13.0\n"}, sticky=[""], foreign=[V], warn="ignoring"),
    Case("sticky-foreign-walks-on", ("ok", "managed:13.0.0"), managed=TWO,
         files={V: b"13.0.0\n", "a/" + V: b"12.8\n"}, sticky=["a"], foreign=["a/" + V], warn="ignoring"),
    Case("sticky-foreign-tool-versions-ignored", ("ok", "managed:12.8.1"), managed=TWO, global_=b"12.8\n",
         files={".tool-versions": b"cuda 13.0\n"}, sticky=[""], foreign=[".tool-versions"], warn="ignoring"),
    Case("sticky-own-file-counts", ("ok", "managed:13.0.2"), managed=TWO, global_=b"12.8\n",
         files={V: b"13.0\n"}, sticky=[""]),
    # the user's own symlink in a sticky directory: its owner (lstat) is the user, so it counts
    Case("sticky-own-symlink-counts", ("ok", "managed:13.0.2"), managed=TWO, global_=b"12.8\n",
         files={"real-version": b"13.0\n"}, special={V: "link:real-version"}, sticky=[""]),
    Case("world-writable-not-sticky-counts", ("ok", "managed:13.0.2"), managed=TWO, global_=b"12.8\n",
         files={V: b"13.0\n"}, foreign=[V], special={"": "mode:0777"}),
    # shared stores: the user's own installs, then each shared store in order, then discovery
    Case("shared-only", ("ok", "shared:a:13.0.2"), shared={"a": ["13.0.2"]}, files={V: b"13.0\n"}),
    Case("shared-own-same-release-wins", ("ok", "managed:13.0.2"), managed=["13.0.2"],
         shared={"a": ["13.0.2"]}, files={V: b"13.0.2\n"}),
    Case("shared-own-prefix-wins", ("ok", "managed:13.0.0"), managed=["13.0.0"],
         shared={"a": ["13.0.2"]}, files={V: b"13\n"}),
    Case("shared-fills-what-own-lacks", ("ok", "shared:a:12.8.1"), managed=["13.0.2"],
         shared={"a": ["12.8.1"]}, files={V: b"12\n"}),
    Case("shared-before-discovered", ("ok", "shared:a:12.8.1"), shared={"a": ["12.8.1"]}, system=["12.8.2"],
         files={V: b"12.8\n"}),
    Case("shared-first-store-wins", ("ok", "shared:a:13.0.0"), shared={"a": ["13.0.0"], "b": ["13.0.2"]},
         files={V: b"13.0\n"}),
    Case("shared-later-store-fills-gap", ("ok", "shared:b:12.8.1"),
         shared={"a": ["13.0.2"], "b": ["12.8.1"]}, files={V: b"12\n"}),
    Case("shared-system-is-discovery", ("ok", "system:12.6.0"), shared={"a": ["13.0.2"]}, system=["12.6.0"],
         files={V: b"system\n"}),
    Case("shared-not-installed", ("missing", "12.4"), shared={"a": ["13.0.2"]}, files={V: b"12.4\n"}),
    Case("shared-empty-entries-trailing-slash", ("ok", "shared:a:13.0.2"), shared={"a": ["13.0.2"]},
         shared_roots="::{a}//:", files={V: b"13\n"}),
    Case("shared-missing-store-offers-nothing", ("ok", "shared:a:13.0.2"), shared={"a": ["13.0.2"]},
         shared_roots="/nonexistent/cudaenv-store:{a}", files={V: b"13\n"}),
    # The admin's global version is the default of users with no version file of their own.
    Case("shared-admin-default", ("ok", "shared:a:13.0.2"), shared={"a": ["12.8.1", "13.0.2"]},
         shared_global={"a": b"13.0\n"}),
    Case("shared-admin-default-own-toolkit-wins", ("ok", "managed:13.0.0"), managed=["13.0.0"],
         shared={"a": ["12.8.1", "13.0.2"]}, shared_global={"a": b"13.0\n"}),
    Case("shared-own-global-wins", ("ok", "managed:12.8.1"), managed=TWO, global_=b"12.8\n",
         shared={"a": ["13.0.2"]}, shared_global={"a": b"13.0\n"}),
    Case("shared-own-global-file-setting-wins", ("ok", "shared:a:12.8.1"), shared={"a": ["12.8.1", "13.0.2"]},
         shared_global={"a": b"13.0\n"}, files={"my-version": b"12.8\n"},
         env={"CUDAENV_VERSION_FILE": "{proj}/my-version"}),
    Case("shared-own-global-file-setting-missing", ("ok", "shared:a:13.0.2"), shared={"a": ["12.8.1", "13.0.2"]},
         shared_global={"a": b"13.0\n"}, env={"CUDAENV_VERSION_FILE": "{proj}/my-version"}),
    Case("shared-project-file-wins", ("ok", "shared:a:12.8.1"), shared={"a": ["12.8.1", "13.0.2"]},
         shared_global={"a": b"13.0\n"}, files={V: b"12.8\n"}),
    Case("shared-admin-default-first-store-with-one", ("ok", "shared:b:12.8.1"),
         shared={"a": ["13.0.2"], "b": ["12.8.1"]}, shared_global={"b": b"12.8\n"}),
    Case("shared-admin-default-first-store-wins", ("ok", "shared:a:13.0.2"),
         shared={"a": ["13.0.2"], "b": ["12.8.1"]}, shared_global={"a": b"13.0\n", "b": b"12.8\n"}),
    Case("shared-admin-default-not-installed", ("missing", "12.4"), shared={"a": ["13.0.2"]},
         shared_global={"a": b"12.4\n"}),
    Case("shared-admin-default-invalid", ("invalid", "shared-a/version", 1), shared={"a": ["13.0.2"]},
         shared_global={"a": b"../../etc\n"}),
    Case("shared-admin-default-system", ("ok", "system:12.8.1"), shared={"a": ["13.0.2"]}, system=["12.8.1"],
         shared_global={"a": b"system\n"}),
    Case("shared-no-admin-default-is-system", ("ok", "system:12.8.1"), shared={"a": ["13.0.2"]},
         system=["12.8.1"]),
    # A toolkit copied in or removed by hand, with no rehash since: every
    # implementation sees versions/ as it is now (pyenv resolves at run time too).
    Case("hand-added-after-rehash", ("ok", "managed:13.1.0"), managed=["13.0.2"], managed_after=["13.1.0"],
         env={"CUDAENV_VERSION": "13"}),
    Case("hand-added-invalid-name-ignored", ("ok", "managed:13.0.2"), managed=["13.0.2"], managed_after=["13..9"],
         env={"CUDAENV_VERSION": "13"}),
    # only X.Y.Z names are toolkits: a directory named 13.1 (a prefix) is no 13.1.0
    Case("hand-added-prefix-name-ignored", ("ok", "managed:13.0.2"), managed=["13.0.2"], managed_after=["13.1"],
         env={"CUDAENV_VERSION": "13"}),
    Case("prefix-name-at-rehash-ignored", ("missing", "13.1"), managed=["13.0.2", "13.1"], files={V: b"13.1\n"}),
    # a discovered toolkit deleted since the rehash is not installed, in every implementation
    Case("system-deleted-after-rehash", ("missing", "12.6"), managed=TWO, system=["12.6.0"],
         system_gone=["12.6.0"], files={V: b"12.6\n"}),
    Case("hand-added-newer-patch", ("ok", "managed:13.0.2"), managed=["13.0.0"], managed_after=["13.0.2"],
         files={V: b"13.0\n"}),
    Case("hand-added-older-patch", ("ok", "managed:13.0.2"), managed=["13.0.2"], managed_after=["13.0.0"],
         files={V: b"13.0\n"}),
    Case("hand-removed-after-rehash", ("ok", "managed:13.0.2"), managed=["13.0.2", "13.1.0"],
         managed_gone=["13.1.0"], env={"CUDAENV_VERSION": "13"}),
    Case("hand-removed-minor-after-rehash", ("ok", "managed:13.0.0"), managed=["13.0.0", "13.0.2"],
         managed_gone=["13.0.2"], files={V: b"13.0\n"}),
    Case("hand-removed-only-one", ("missing", "12.8"), managed=["12.8.1", "13.0.2"], managed_gone=["12.8.1"],
         files={V: b"12.8\n"}),
    # A store anyone could have made (a missing mount under a 1777 directory) or may change is skipped.
    # The admin's default of a store someone else could write is not obeyed either.
    Case("shared-admin-default-of-untrusted-store-not-used", ("missing", "system"), shared={"a": ["13.0.2"]},
         shared_global={"a": b"13.0\n"}, shared_mode={"a": 0o777}, warn="is writable by others (mode 0777)"),
    Case("shared-admin-default-of-untrusted-store-gives-way", ("ok", "shared:b:12.8.1"),
         shared={"a": ["13.0.2"], "b": ["12.8.1"]}, shared_global={"a": b"13.0\n", "b": b"12.8\n"},
         shared_foreign=["a"], warn="belongs to uid"),
    Case("shared-store-of-another-user-skipped", ("missing", "13.0"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_foreign=["a"], files={V: b"13.0\n"},
         warn="in CUDAENV_SHARED_ROOTS: "),
    Case("shared-store-of-another-user-gives-way", ("ok", "shared:b:13.0.0"), shared={"a": ["12.8.1"], "b": ["13.0.0"]},
         shared_after={"a": ["13.0.2"]}, shared_foreign=["a"], files={V: b"13.0\n"}, warn="belongs to uid"),
    Case("shared-world-writable-store-skipped", ("missing", "13.0"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_mode={"a": 0o777}, files={V: b"13.0\n"},
         warn="is writable by others (mode 0777); a shared store and every directory above it"),
    Case("shared-group-writable-store-skipped", ("missing", "13.0"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_mode={"a": 0o775}, shared_other_group=["a"], files={V: b"13.0\n"},
         warn="(mode 0775)"),
    # Group write by the user's private group (umask 002 on Debian and Red Hat) is nobody else's.
    Case("shared-private-group-writable-is-used", ("ok", "shared:a:13.0.2"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_mode={"a": 0o775}, files={V: b"13.0\n"}),
    Case("shared-sticky-store-itself-skipped", ("missing", "13.0"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_mode={"a": 0o1777}, files={V: b"13.0\n"}, warn="(mode 1777)"),
    Case("shared-below-world-writable-skipped", ("missing", "13.0"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_above=0o777, files={V: b"13.0\n"},
         warn="/above is writable by others (mode 0777)"),
    Case("shared-below-sticky-is-used", ("ok", "shared:a:13.0.2"), shared={"a": ["12.8.1"]},
         shared_after={"a": ["13.0.2"]}, shared_above=0o1777, files={V: b"13.0\n"}),
    Case("shared-added-after-rehash", ("ok", "shared:a:13.0.2"), managed=["12.8.1"],
         shared={"a": ["13.0.0"]}, shared_after={"a": ["13.0.2"]}, files={V: b"13.0\n"}),
    # a table stale for a shared store still finds what discovery found
    Case("shared-stale-discovered-still-found", ("ok", "system:12.6.0"), shared={"a": ["13.0.0"]},
         shared_after={"a": ["13.0.2"]}, system=["12.6.0"], files={V: b"12.6\n"}),
    Case("shared-removed-after-rehash", ("ok", "shared:a:13.0.0"), shared={"a": ["13.0.0", "13.0.2"]},
         shared_gone={"a": ["13.0.2"]}, files={V: b"13.0\n"}),
    Case("shared-removed-nothing-left", ("missing", "12.8"), shared={"a": ["12.8.1", "13.0.2"]},
         shared_gone={"a": ["12.8.1"]}, files={V: b"12.8\n"}),
    Case("shared-setting-changed-after-rehash", ("ok", "shared:b:13.0.2"),
         shared={"a": ["13.0.0"], "b": ["13.0.2"]}, shared_roots="{b}:{a}", files={V: b"13\n"}),
    Case("version-file-setting-relative", ("bad-setting", "CUDAENV_VERSION_FILE"), managed=TWO,
         env={"CUDAENV_VERSION_FILE": "rel/version"}),
    Case("shared-relative-entry", ("bad-setting", "CUDAENV_SHARED_ROOTS"), managed=TWO,
         shared_roots="opt/cudaenv", files={V: b"13\n"}),
    Case("shared-relative-after-good", ("bad-setting", "CUDAENV_SHARED_ROOTS"), shared={"a": ["13.0.2"]},
         shared_roots="{a}:./store", files={V: b"13\n"}),
    Case("shared-tilde-entry", ("bad-setting", "CUDAENV_SHARED_ROOTS"), managed=TWO,
         shared_roots="~/store", files={V: b"13\n"}),
    Case("shared-newline-in-entry", ("bad-setting", "CUDAENV_SHARED_ROOTS"), managed=TWO,
         shared_roots="/opt/a\n/opt/b", files={V: b"13\n"}),
    Case("shared-control-byte", ("bad-setting", "CUDAENV_SHARED_ROOTS"), managed=TWO,
         shared_roots="/opt/\x1b[31mred", files={V: b"13\n"}),
]
