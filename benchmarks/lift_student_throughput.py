"""Measure a local student's generation throughput (wall and CPU time) at several batch sizes.

Sizes the demo's budget: ``python benchmarks/lift_student_throughput.py [--student smollm2-135m]
[--tokens 160] [--batches 1,4]``. Prints one line per batch size: wall seconds, process CPU
seconds, tokens generated, tokens per wall second.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--student", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=160)
    parser.add_argument("--batches", default="1,4")
    args = parser.parse_args()

    from upskills.lift.prompting import system_prompt
    from upskills.lift.runner import load_provider
    from upskills.lift.student import load_student
    from upskills.llm.base import GenParams, Message
    from upskills.tasks import load_task

    student = load_student(args.student)
    start = time.monotonic()
    provider = load_provider(student)
    print(f"load: {time.monotonic() - start:.1f} s")
    task = load_task("relu")
    messages = [
        Message(role="system", content=system_prompt("")),
        Message(role="user", content=f"{task.statement}\n\n```python\n{task.source}```"),
    ]
    params = GenParams(temperature=0.7, top_p=0.95, max_tokens=args.tokens, seed=0)
    for size in (int(b) for b in args.batches.split(",")):
        wall, cpu = time.monotonic(), time.process_time()
        out = provider.generate_batch([messages] * size, [], params, n=1)
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        tokens = sum(r[0].usage.output_tokens for r in out)
        print(
            f"batch {size}: wall {wall:.1f} s, cpu {cpu:.1f} s, {tokens} tokens, "
            f"{tokens / wall:.1f} tokens/s, prompt {out[0][0].usage.input_tokens} tokens"
        )


if __name__ == "__main__":
    main()
