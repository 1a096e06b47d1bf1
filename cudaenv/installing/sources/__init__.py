"""Install sources: each turns a release and a set of components into a Plan.

base.py defines what a source is (the Source protocol, Artifact, Plan and the
errors); registry.py names the sources, their order for `--source auto` and
their help; redist.py, apt/ and pypi.py are the sources.
"""
