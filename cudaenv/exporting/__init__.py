"""Exports: the store's toolkits described for other environment managers.

Owns: modulefiles for Lmod and Environment Modules (modulefiles) and Spack
externals (spack), each written from the same activation the shims apply.

May import: cudaenv.selecting, cudaenv.foundation and cudaenv.data.

Offers the layers above: `modulefiles.generate` (`cudaenv modulefiles`),
`modulefiles.refresh_if_configured` (an install and an uninstall keep the
configured directory in step) and `spack.export`.
"""
