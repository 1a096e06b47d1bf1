"""Selection: which toolkit applies here, and how it reaches every process.

Owns: version files (versionfile) and the precedence that reads them
(selection); the alias table the shims read in O(1), its rebuild and the
shims themselves (aliases, alias_lookup, rehash, shims, storelinks); toolkits
found outside the store and shared stores (discover, shared_roots); the
installed list (inventory); the variables a toolkit sets and where its
libraries load from (activation, libsearch); the host compiler nvcc gets
(hostcc, hostcc_rules); the shell hook (shell); and a toolkit bound to a venv
(venvbind: bind, unbind, show and the slow start; its fast start is
cudaenv/venvstart.py, outside the rooms, which every start of a bound
interpreter imports).

May import: cudaenv.foundation and cudaenv.data (and cudaenv.venvstart, the
bound start's record format, which imports nothing of cudaenv).

Offers the layers above: `selection.select`/`current` (the answer and its
origin), `activation.toolkit_env` (the environment of a toolkit), `rehash`,
and the rendered shell code.
"""
