"""A shrink's shrink.json as docs/ keeps it: the machine's run directories cut to their last two names.

.venv/bin/python benchmarks/store_shrink.py RUN_DIR/shrink/shrink.json docs/benchmarks/shrink-LABEL.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def short(path: str) -> str:
    return "/".join(Path(path).parts[-2:])


def main(source: str, target: str) -> None:
    data = json.loads(Path(source).read_text())
    data["run"] = short(data["run"])
    data["attempts"] = [{**a, "dir": short(a["dir"])} for a in data["attempts"]]
    data["command"] = "bash benchmarks/campaigns.sh shrink"
    Path(target).write_text(json.dumps(data, indent=1) + "\n")
    print(target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
