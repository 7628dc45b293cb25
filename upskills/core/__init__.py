"""Shared definitions every layer imports and none owns: the kernel hash, device resolution.

Each value here has exactly one definition (``docs/design/seams.md``). Modules in this package
import nothing from upskills, and torch only inside functions.
"""
