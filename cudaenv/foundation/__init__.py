"""The foundations: what every other part of cudaenv stands on.

Owns: the error model and its exit codes (errors), every CUDAENV_* setting and
the configuration files (settings, config), the version grammar and its
arithmetic (versions), the store's paths under CUDAENV_ROOT (store), a toolkit
root on disk and the companion libraries it holds (toolkit, companion_libs),
and the careful ways of touching the machine: opening planted files
(safeopen), who may write a path (ownership), quoting for other programs'
parsers (quoting), starting programs (programs), locks (locking), free space
(diskspace), progress lines (progress), interruptible threads (parallel) and
the CPU's name in each channel (arch).

May import: the standard library and cudaenv.data; nothing else of cudaenv.

Offers the layers above: plain functions and values with no knowledge of
selection, installs or diagnosis.
"""
