"""Diagnosis: what the machine has and needs, and whether the toolkit in use fits.

Owns: the probe of GPUs, driver, target Python and consumers (machine,
consumers, torch_archs, and _live_probe, which runs inside the target Python
and is never imported); the resolver's minimum and recommended release
(resolver, numba_cupy); the doctor's checks and report (diagnostics, metrics);
and JIT caches built by another toolkit (jitcache).

May import: cudaenv.selecting, cudaenv.foundation and cudaenv.data (and
cudaenv.venvstart, to read a bound interpreter's markers); never the
installer, so a probe or a doctor run cannot download or write a toolkit.

Offers the layers above: `machine.probe`, `resolver.resolve`/`recommend` and
`diagnostics.doctor`, published as cudaenv.probe, cudaenv.resolve and
cudaenv.doctor, with their JSON schemas.
"""
