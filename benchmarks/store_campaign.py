"""A campaign's campaign.json as docs/ keeps it: statistics made again from its run records, run directories cut to their names.

    .venv/bin/python benchmarks/store_campaign.py CAMPAIGN_DIR/campaign.json docs/benchmarks/campaign-LABEL.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from failsafe.campaigns.stats import campaign_data, read_campaign


def main(source: str, target: str) -> None:
    data = read_campaign(Path(source))
    runs = [{**r, "dir": "/".join(Path(r["dir"]).parts[-2:])} for r in data["runs"]]
    Path(target).write_text(json.dumps(campaign_data(data["campaign"], runs), indent=1, default=str) + "\n")
    print(target)


if __name__ == "__main__":
    main(*sys.argv[1:3])
