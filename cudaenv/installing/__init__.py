"""Installing: a release turned into a toolkit in the store, safely.

Owns: the install and uninstall transaction with its receipt (install);
fetching with retries, resume and checksums (download); the archive cache and
what it may be trusted with (cache, cachetrust); safe extraction of tar.xz,
.deb and wheels (extract, deb); the layout a CUDA_HOME must have (layout);
component names (components); pinned redist hashes and offline mirrors (pins,
mirror); `install --system` (system_install); and the install sources behind
one protocol (sources/).

May import: cudaenv.exporting (a finished install refreshes the modulefiles),
cudaenv.selecting (an install rehashes), cudaenv.foundation and cudaenv.data;
never the diagnosis, which asks only what is there.

Offers the layers above: `install.install`/`uninstall`, the source registry
for `--source`, the cache commands and `mirror`.
"""
