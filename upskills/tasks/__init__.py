"""Kernel tasks: the built-in suite and KernelBench-format problem files.

``load_task("softmax_rows")`` or ``load_task("path/23_Softmax.py")`` returns a :class:`Task`;
``load_folder("KernelBench/level1")`` loads a whole folder. Loading never executes a task file
(and never imports torch); ``upskills.tasks.runtime`` does that, for the verifier.
"""

from upskills.tasks.loader import (
    builtin_names,
    builtin_tasks,
    infer_tags,
    load_file,
    load_folder,
    load_task,
)
from upskills.tasks.model import CATEGORIES, ShapeVariant, Task
from upskills.tasks.source import TaskError

__all__ = [
    "CATEGORIES",
    "ShapeVariant",
    "Task",
    "TaskError",
    "builtin_names",
    "builtin_tasks",
    "infer_tags",
    "load_file",
    "load_folder",
    "load_task",
]
