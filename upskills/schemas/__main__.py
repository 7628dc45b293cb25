"""``python -m upskills.schemas``: regenerate the committed JSON Schemas."""

from upskills.schemas import write_all

for path in write_all():
    print(path.name)
