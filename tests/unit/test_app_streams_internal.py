"""Before a run, the app kind deletes an earlier run's Kafka Streams internal topics of its apps' groups
(GROUP-*-changelog, GROUP-*-repartition), and never a topic the scenario declares, whatever its name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from failsafe.scenarios.engine import setup
from failsafe.scenarios.kinds.app import workload
from failsafe.tools import admin


def test_only_the_internal_topics_of_the_apps_groups_that_the_scenario_does_not_declare_are_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed = [
        "g-count-store-changelog",
        "g-KSTREAM-REPARTITION-0000-repartition",
        "g-mine-changelog",  # the scenario's own topic
        "other-store-changelog",  # another group's
        "g-input",  # not an internal topic's name
    ]
    fake = SimpleNamespace(list_topics=lambda timeout: SimpleNamespace(topics={t: None for t in listed}))
    deleted: list[list[str]] = []
    monkeypatch.setattr(admin, "new_admin", lambda bootstrap: fake)
    monkeypatch.setattr(setup, "delete_topics", lambda a, topics: deleted.append(list(topics)))
    workload._delete_streams_internal_topics("127.0.0.1:9", ["g"], {"g-mine-changelog", "g-input"})
    assert deleted == [["g-KSTREAM-REPARTITION-0000-repartition", "g-count-store-changelog"]]
