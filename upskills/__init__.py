"""upskills: distill GPU-kernel skills from a teacher's traces and measure their lift on students.

Importing this package is cheap: torch, triton, transformers and the model SDKs load lazily,
only inside the functions that need them.
"""

__version__ = "0.1.0"
