"""The commands: one module per command or family, each a thin click layer over the rooms below.

A command checks its arguments, calls one room's functions and prints the answer; it never
imports another command module except common.py. cli.py maps each command name to its module.
"""
